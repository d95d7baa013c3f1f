package dbquery

import (
	"fmt"
	"strings"
)

// dialect says how a query is written: which quotes and comments hide a "$1" from the
// parameter scan, and what the driver's placeholder is.
type dialect int

const (
	postgres dialect = iota
	mysqlDialect
	sqlite
)

func (d dialect) String() string {
	switch d {
	case postgres:
		return "postgres"
	case mysqlDialect:
		return "mysql"
	default:
		return "sqlite"
	}
}

// bindParams checks the query's $1..$n against params and returns the statement and the
// arguments to hand the driver. PostgreSQL and SQLite take $n as written (modernc binds
// $n by its number); MySQL gets "?" for each $n, and the arguments in the order the
// placeholders appear, so a repeated or reordered $n works there too. A "$" inside a string
// literal, a quoted identifier, a comment or a PostgreSQL dollar-quoted string is not a
// parameter and is left as it is. Every parameter must be used, and every $n must have one:
// PostgreSQL insists on both, and the other two are held to the same rule.
func bindParams(d dialect, query string, params []any) (string, []any, error) {
	var (
		out   strings.Builder
		order []int
		used  = make([]bool, len(params))
	)
	if d == mysqlDialect {
		out.Grow(len(query))
	}
	emit := func(s string) {
		if d == mysqlDialect {
			out.WriteString(s)
		}
	}
	i := 0
	for i < len(query) {
		c := query[i]
		switch {
		case c == '\'' || (c == '"') || (c == '`' && d != postgres) || (c == '[' && d == sqlite):
			end := skipQuoted(d, query, i)
			emit(query[i:end])
			i = end
		case c == '-' && strings.HasPrefix(query[i:], "--") && (d != mysqlDialect || i+2 == len(query) || isSpace(query[i+2])),
			c == '#' && d == mysqlDialect:
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			emit(query[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			end := skipBlockComment(d, query, i)
			emit(query[i:end])
			i = end
		case c == '?' && d != postgres: // in PostgreSQL, a jsonb operator
			return "", nil, fmt.Errorf("%w: write parameters as $1..$n, not ?", ErrParams)
		case c == '$' && (i == 0 || !isIdent(query[i-1])):
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j == i+1 { // not a parameter: a dollar-quoted string in PostgreSQL
				if d == postgres {
					if end, ok := skipDollarQuoted(query, i); ok {
						i = end
						continue
					}
				}
				emit("$")
				i++
				continue
			}
			n := 0
			for _, r := range query[i+1 : j] {
				n = n*10 + int(r-'0')
				if n > len(params) {
					break
				}
			}
			if n < 1 || n > len(params) {
				return "", nil, fmt.Errorf("%w: %s has no parameter (%d given)", ErrParams, query[i:j], len(params))
			}
			used[n-1] = true
			order = append(order, n-1)
			emit("?")
			i = j
		default:
			emit(query[i : i+1])
			i++
		}
	}
	for k, u := range used {
		if !u {
			return "", nil, fmt.Errorf("%w: parameter $%d is not used in the query", ErrParams, k+1)
		}
	}
	if d != mysqlDialect {
		return query, params, nil
	}
	args := make([]any, len(order))
	for k, n := range order {
		args[k] = params[n]
	}
	return out.String(), args, nil
}

// skipQuoted returns the index just past the quoted string or identifier starting at i
// (or the end of the query when it is not closed; the database reports that).
func skipQuoted(d dialect, q string, i int) int {
	open := q[i]
	closing := open
	if open == '[' {
		closing = ']'
	}
	// Backslash escapes: MySQL strings, and PostgreSQL's E'...' strings.
	backslash := (d == mysqlDialect && open != '`') ||
		(d == postgres && open == '\'' && i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i == 1 || !isIdent(q[i-2])))
	for j := i + 1; j < len(q); j++ {
		switch {
		case backslash && q[j] == '\\':
			j++
		case q[j] == closing:
			if closing != ']' && j+1 < len(q) && q[j+1] == closing { // doubled: an escaped quote
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

// skipBlockComment returns the index just past the /* */ comment at i; PostgreSQL's nest.
func skipBlockComment(d dialect, q string, i int) int {
	depth := 0
	for j := i; j < len(q)-1; j++ {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			if depth == 0 || d == postgres {
				depth++
			}
			j++
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(q)
}

// skipDollarQuoted returns the index past a PostgreSQL $tag$...$tag$ string at i.
func skipDollarQuoted(q string, i int) (int, bool) {
	j := i + 1
	for j < len(q) && q[j] != '$' {
		if !isIdent(q[j]) || (j == i+1 && q[j] >= '0' && q[j] <= '9') {
			return 0, false
		}
		j++
	}
	if j >= len(q) {
		return 0, false
	}
	tag := q[i : j+1]
	end := strings.Index(q[j+1:], tag)
	if end < 0 {
		return len(q), true
	}
	return j + 1 + end + len(tag), true
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

package dbquery

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	moderncsqlite "modernc.org/sqlite"

	"github.com/svcflow/svcflow/engine/outbound"
)

// target is a parsed connection string: how to open it, and what must never be shown.
type target struct {
	dialect dialect
	open    func() (*sql.DB, error)
	secrets []string
}

// parseDSN reads the three forms of connection string. Its errors never quote the string.
func parseDSN(dsn string, allowPrivate bool) (target, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return parsePostgres(dsn, allowPrivate)
	case strings.HasPrefix(dsn, "mysql://"):
		return parseMySQL(dsn, allowPrivate)
	case strings.HasPrefix(dsn, "sqlite:"):
		return parseSQLite(strings.TrimPrefix(dsn, "sqlite:"), allowPrivate)
	}
	return target{}, &Error{Code: CodeUnsupportedDSN, Err: ErrUnsupportedDSN,
		Message: "want postgres://..., mysql://user:pass@host:port/db or sqlite:PATH"}
}

func secretsOf(dsn, password string) []string {
	out := []string{dsn}
	if password != "" {
		out = append(out, password, url.QueryEscape(password), url.PathEscape(password))
	}
	return out
}

func parsePostgres(dsn string, allowPrivate bool) (target, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the connection string.
		return target{}, &Error{Database: "postgres", Code: CodeUnsupportedDSN, Err: ErrUnsupportedDSN, Message: "malformed connection string"}
	}
	cfg.DialFunc = outbound.NewDialer(allowPrivate).DialContext
	for _, fb := range cfg.Fallbacks {
		if !allowPrivate && strings.HasPrefix(fb.Host, "/") {
			// A Unix socket is this machine; the dialer refuses it too, this says why sooner.
			return target{}, refusedTarget(postgres, "unix socket")
		}
	}
	if !allowPrivate && strings.HasPrefix(cfg.Host, "/") {
		return target{}, refusedTarget(postgres, "unix socket")
	}
	return target{
		dialect: postgres,
		secrets: secretsOf(dsn, cfg.Password),
		open: func() (*sql.DB, error) {
			db := stdlib.OpenDB(*cfg)
			configure(db, connsPerDB)
			return db, nil
		},
	}, nil
}

func parseMySQL(dsn string, allowPrivate bool) (target, error) {
	bad := func(msg string) error {
		return &Error{Database: "mysql", Code: CodeUnsupportedDSN, Err: ErrUnsupportedDSN, Message: msg}
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return target{}, bad("malformed connection string: want mysql://user:pass@host:port/db")
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	cfg.Addr = net.JoinHostPort(u.Hostname(), port)
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.Timeout = 10 * time.Second
	cfg.Logger = nopLogger{} // the driver logs to stderr by default
	cfg.DialFunc = outbound.NewDialer(allowPrivate).DialContext
	for name, vals := range u.Query() {
		v := vals[len(vals)-1]
		switch name {
		case "tls":
			switch v {
			case "true", "false", "skip-verify", "preferred":
				cfg.TLSConfig = v
			default:
				return target{}, bad("tls must be true, false, skip-verify or preferred")
			}
		case "charset":
			cfg.Params = map[string]string{"charset": v}
		default:
			// Named, not its value: a value may be a secret.
			return target{}, bad("unsupported parameter " + strconv.Quote(name) + " (tls and charset are)")
		}
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return target{}, bad("malformed connection string")
	}
	return target{
		dialect: mysqlDialect,
		secrets: secretsOf(dsn, cfg.Passwd),
		open: func() (*sql.DB, error) {
			db := sql.OpenDB(connector)
			configure(db, connsPerDB)
			return db, nil
		},
	}, nil
}

func parseSQLite(path string, allowPrivate bool) (target, error) {
	if path == "" {
		return target{}, &Error{Database: "sqlite", Code: CodeUnsupportedDSN, Err: ErrUnsupportedDSN, Message: "empty path"}
	}
	if !allowPrivate {
		// A file on this machine, the service's own database among them.
		return target{}, refusedTarget(sqlite, "SQLite file on this machine")
	}
	name, conns := path, connsPerDB
	if path == ":memory:" {
		conns = 1 // each connection would be a database of its own
	}
	sep := "?"
	if strings.Contains(name, "?") {
		sep = "&"
	}
	name += sep + "_pragma=busy_timeout(" + strconv.FormatInt(sqliteBusyFor.Milliseconds(), 10) + ")"
	return target{
		dialect: sqlite,
		secrets: []string{path},
		open: func() (*sql.DB, error) {
			db, err := sql.Open("sqlite", name)
			if err != nil {
				return nil, err
			}
			configure(db, conns)
			if conns == 1 {
				db.SetConnMaxIdleTime(0)
				db.SetConnMaxLifetime(0)
			}
			return db, nil
		},
	}, nil
}

func configure(db *sql.DB, conns int) {
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(connMaxLife)
	db.SetConnMaxIdleTime(connMaxIdle)
}

func refusedTarget(d dialect, what string) *Error {
	return &Error{Database: d.String(), Code: CodeTargetNotAllowed, Err: outbound.ErrTargetNotAllowed,
		Message: what + privateNote}
}

const privateNote = " (private targets are not allowed in this deployment)"

type nopLogger struct{}

func (nopLogger) Print(...any) {}

// classify turns a driver's error into an *Error: the timeout, the guard's refusal, or
// fallback, with the driver's message stripped of the connection string and password.
func (t target) classify(ctx context.Context, err error, fallback error) *Error {
	e := &Error{Database: t.dialect.String(), Err: fallback, Code: CodeQuery}
	if fallback == ErrConnect {
		e.Code = CodeConnect
	}
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	var liteErr *moderncsqlite.Error
	switch {
	case errors.As(err, &pgErr):
		e.DBCode = pgErr.Code
		if pgErr.Code == "57014" { // query_canceled: statement_timeout
			e.Code, e.Err = CodeTimeout, ErrTimeout
		}
	case errors.As(err, &myErr):
		e.DBCode = strconv.Itoa(int(myErr.Number))
		switch myErr.Number {
		case 1969, 3024, 1317: // MariaDB max_statement_time, MySQL max_execution_time, interrupted
			e.Code, e.Err = CodeTimeout, ErrTimeout
		}
	case errors.As(err, &liteErr):
		e.DBCode = strconv.Itoa(liteErr.Code())
	}
	var te *outbound.TargetError
	switch {
	case errors.As(err, &te):
		e.Code, e.Err = CodeTargetNotAllowed, outbound.ErrTargetNotAllowed
		e.Message = te.Reason
		if te.Addr.IsValid() {
			e.Message = te.Addr.String() + " is a " + te.Reason
		}
		e.Message += privateNote
		return e
	case ctx.Err() != nil: // the caller's context, not the query's timeout
		e.Code, e.Err = CodeCanceled, ctx.Err()
	case e.Err == ErrTimeout:
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		e.Code, e.Err = CodeTimeout, ErrTimeout
	}
	e.Message = t.scrub(err.Error())
	return e
}

func (t target) scrub(msg string) string {
	for _, s := range t.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return msg
}

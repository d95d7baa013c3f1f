package core

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Search keys: a workflow's definition may name paths into its input (search_keys); when a
// run starts, the string and number values found there are written to the search key index
// in the transaction that creates the run, and GET /runs?key= finds the run by them.
const (
	// MaxSearchKeys is how many search keys a definition may declare.
	MaxSearchKeys = 5
	// MaxSearchKeyValue is the longest value (in bytes) the index keeps: a longer one is
	// not a business key, and is left out.
	MaxSearchKeyValue = 256
	// CodeInvalidSearchKey is the code of a definition refused for its search_keys.
	CodeInvalidSearchKey = "invalid_search_key"
)

// searchKeyPath is @input followed by at least one segment: a field name or an array index.
// A path is at most 200 bytes.
var searchKeyPath = regexp.MustCompile(`^@input(\.[A-Za-z0-9_-]+)+$`)

// checkSearchKeys checks a definition's search_keys: at most MaxSearchKeys paths into the
// input, each once.
func checkSearchKeys(keys []string) []Problem {
	var out []Problem
	if len(keys) > MaxSearchKeys {
		out = append(out, Problem{Pointer: "/definition/search_keys", Message: fmt.Sprintf("at most %d search keys", MaxSearchKeys)})
	}
	seen := map[string]bool{}
	for i, k := range keys {
		at := fmt.Sprintf("/definition/search_keys/%d", i)
		switch {
		case len(k) > 200 || !searchKeyPath.MatchString(k):
			out = append(out, Problem{Pointer: at, Message: fmt.Sprintf("%q is not a path into the input: @input.<field>[.<field or index>...]", k)})
		case seen[k]:
			out = append(out, Problem{Pointer: at, Message: fmt.Sprintf("%q is declared twice", k)})
		}
		seen[k] = true
	}
	return out
}

// searchKeyValues returns what def's search keys find in input: each string, and each
// number as its decimal text (as the input wrote it), up to MaxSearchKeyValue bytes. A path
// that finds nothing, or an object, array, boolean or null, adds nothing. The input is read
// in place, not decoded.
func searchKeyValues(def *svctype.Definition, input json.RawMessage) []string {
	var out []string
	for _, k := range def.SearchKeys {
		path, ok := strings.CutPrefix(k, "@input.")
		if !ok {
			continue
		}
		r := gjson.GetBytes(input, path)
		var v string
		switch r.Type {
		case gjson.String:
			v = r.Str
		case gjson.Number:
			v = r.Raw
		default:
			continue
		}
		if v != "" && len(v) <= MaxSearchKeyValue {
			out = append(out, v)
		}
	}
	return out
}

// putSearchKeys indexes a run being started under what its workflow's search keys find in
// its input, in the run's transaction.
func (e *Core) putSearchKeys(ctx context.Context, tx storage.Tx, run *svctype.Run) error {
	def, err := e.definition(run)
	if err != nil || len(def.SearchKeys) == 0 {
		return err
	}
	values := searchKeyValues(def, run.Input)
	if len(values) == 0 {
		return nil
	}
	return tx.PutRunSearchKeys(ctx, run.OrgID, run.ID, run.CreatedAt, values)
}

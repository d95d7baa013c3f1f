package runtime

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/svcflow/svcflow/engine/svctype"
)

// TablePath is the input of the routes under /custom-tables/{tableName}.
type TablePath struct {
	OrgParam
	Name string `path:"tableName" doc:"Table name."`
}

// TableBody is the body of POST /custom-tables.
type TableBody struct {
	Name    string            `json:"name" doc:"Unique within the organization."`
	Fields  map[string]string `json:"fields" doc:"Column name to type (text, ...)."`
	Indexes [][]string        `json:"indexes,omitempty" maxItems:"8" doc:"Equality indexes, each a set of 1 to 4 declared columns, e.g. [[\"k\"], [\"a\", \"b\"]]. A where naming every column of one reads through it instead of every row. The key columns of an upsert are indexed without being listed."`
}

// IndexBody is the body of POST /custom-tables/{tableName}/indexes.
type IndexBody struct {
	Columns []string `json:"columns" minItems:"1" maxItems:"4" doc:"The declared columns the index covers (a set: order does not matter)."`
}

// RowsUpdate is the body of PATCH /custom-tables/{tableName}/rows.
type RowsUpdate struct {
	Where Object `json:"where" doc:"Column to value: the rows to change ({} matches every row)."`
	Set   Object `json:"set" doc:"Column to new value; only declared columns."`
	Scan  bool   `json:"scan,omitempty" doc:"Allow a where that no index serves on a table of more than 10,000 rows (it reads every row); refused with 422 scan_refused otherwise."`
}

// RowsUpdated is the answer of PATCH /custom-tables/{tableName}/rows.
type RowsUpdated struct {
	Updated int `json:"updated" doc:"How many rows changed."`
}

var tableNotFound = failure{notFound: "custom table not found"}

func (s *Server) registerTables() {
	o := op("create-custom-table", http.MethodPost, "/custom-tables", "Create a custom table", "Custom tables")
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict}
	register(s, o, failure{conflict: "a custom table with this name already exists in the organization"}, s.createCustomTable)

	o = op("list-custom-tables", http.MethodGet, "/custom-tables", "List the organization's custom tables", "Custom tables")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listCustomTables)

	o = op("add-custom-table-index", http.MethodPost, "/custom-tables/{tableName}/indexes", "Add an index to a custom table", "Custom tables")
	o.Description = "Declares an equality index on a set of declared columns and builds it over the table's rows, " +
		"2,000 rows a transaction so that writes to the table go on meanwhile; answers with the table once the index is ready. " +
		"Writes keep it from the moment it is declared. 409 when an index on the same columns exists; " +
		"one left building by a stopped build is built again."
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, failure{notFound: tableNotFound.notFound, conflict: "the table has an index on these columns"}, s.addCustomTableIndex)

	o = op("read-custom-table-rows", http.MethodGet, "/custom-tables/{tableName}/rows", "Page through a custom table's rows", "Custom tables")
	o.Description = "The rows whose columns equal every `where` entry, oldest first (by creation time, then id), " +
		"a page at a time like every list: pass `next_cursor` back as `?cursor=` until it is empty."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: tableNotFound.notFound, in: "query"}, s.readCustomTableRows)

	o = op("update-custom-table-rows", http.MethodPatch, "/custom-tables/{tableName}/rows", "Set columns on the rows that match", "Custom tables")
	o.Description = "Merges `set` into every row whose columns equal every `where` entry (an empty `where` " +
		"matches every row). Integrators advance exception rows this way, e.g. set status. " +
		"A row written by an upsert keeps its identity under its key columns: setting one moves the row to its new key, " +
		"so later upserts find it there; a patch that would give two such rows the same key is 409 and changes nothing."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, failure{notFound: tableNotFound.notFound,
		conflict: "the patch would give two rows of the table the same key; no row was changed"}, s.updateCustomTableRows)
}

type createCustomTableInput struct {
	OrgParam
	Body TableBody
}

func (s *Server) createCustomTable(ctx context.Context, in *createCustomTableInput) (*answer[*svctype.Table], error) {
	t, err := s.eng.CreateTable(ctx, in.OrgID, in.Body.Name, in.Body.Fields, in.Body.Indexes...)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Table]{Body: t}, nil
}

type listCustomTablesInput struct {
	OrgParam
	Paging
}

func (s *Server) listCustomTables(ctx context.Context, in *listCustomTablesInput) (*answer[List[svctype.Table]], error) {
	page, err := s.eng.ListTables(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Table]]{Body: listOf(page, same[svctype.Table])}, nil
}

type addCustomTableIndexInput struct {
	TablePath
	Body IndexBody
}

func (s *Server) addCustomTableIndex(ctx context.Context, in *addCustomTableIndexInput) (*answer[*svctype.Table], error) {
	t, err := s.eng.AddTableIndex(ctx, in.OrgID, in.Name, in.Body.Columns)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Table]{Body: t}, nil
}

type readCustomTableRowsInput struct {
	TablePath
	Where string `query:"where" maxLength:"65536" doc:"JSON object of column to value; rows whose columns equal every entry. Example: {\"status\":\"pending_review\"}"`
	Scan  bool   `query:"scan" doc:"Allow a where that no index serves on a table of more than 10,000 rows (it reads every row); refused with 422 scan_refused otherwise."`
	Paging
}

func (s *Server) readCustomTableRows(ctx context.Context, in *readCustomTableRowsInput) (*answer[List[svctype.Row]], error) {
	where, err := whereParam(in.Where)
	if err != nil {
		return nil, err
	}
	page, err := s.eng.ListRows(ctx, in.OrgID, in.Name, where, in.Scan, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Row]]{Body: listOf(page, same[svctype.Row])}, nil
}

type updateCustomTableRowsInput struct {
	TablePath
	Body RowsUpdate
}

func (s *Server) updateCustomTableRows(ctx context.Context, in *updateCustomTableRowsInput) (*answer[RowsUpdated], error) {
	n, err := s.eng.UpdateRows(ctx, in.OrgID, in.Name, in.Body.Where, in.Body.Set, in.Body.Scan)
	if err != nil {
		return nil, err
	}
	return &answer[RowsUpdated]{Body: RowsUpdated{Updated: n}}, nil
}

// whereParam decodes ?where=: absent means every row; otherwise a JSON object.
func whereParam(raw string) (map[string]any, error) {
	if raw == "" {
		return map[string]any{}, nil
	}
	var where map[string]any
	if err := json.Unmarshal([]byte(raw), &where); err != nil || where == nil {
		d := &ProblemDetail{Location: "query.where", Message: "must be a JSON object of column to value"}
		if len(raw) <= 200 {
			d.Value = raw
		}
		return nil, newProblem(http.StatusUnprocessableEntity, codeValidation, "validation failed", d)
	}
	return where, nil
}

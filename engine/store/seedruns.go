package store

import (
	"context"
	"fmt"

	"github.com/svcflow/svcflow/engine/svctype"
)

// SeedRuns writes n runs of orgID for benchmarks, in bulk (one INSERT ... SELECT per
// 100,000 rows, as the store writes them, not through the engine one by one). Run i (from
// 0) is created at 2026-01-01 plus i seconds, belongs to workflows[i % len(workflows)]
// (created here, named wf-0, wf-1, ...), and is paused when i % 100 is 0, running when it is
// 1 or 2, failed up to 9, else completed (ended a second after it started). When keyed, its
// input is {"invoice_id": "INV-<i, 7 digits>"} and that value is in the search key index.
// It returns the workflows' ids.
func SeedRuns(ctx context.Context, s *Store, orgID string, n, workflows int, keyed bool) ([]string, error) {
	ids := make([]string, workflows)
	for w := range workflows {
		wf := &svctype.Workflow{OrgID: orgID, Name: fmt.Sprintf("wf-%d", w), Definition: []byte(`{"actions":[]}`)}
		if err := s.CreateWorkflow(ctx, wf); err != nil {
			return nil, err
		}
		ids[w] = wf.ID
	}
	const chunk = 100_000
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		var runs, keys string
		var runArgs, keyArgs []any
		if s.dialect == dialectSQLite {
			g := `WITH RECURSIVE g(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM g WHERE i + 1 < ?) `
			at := `strftime('%Y-%m-%d %H:%M:%S', '2026-01-01', '+' || i || ' seconds') || '+00:00'`
			end := `strftime('%Y-%m-%d %H:%M:%S', '2026-01-01', '+' || (i + 1) || ' seconds') || '+00:00'`
			runs = g + `INSERT INTO runs (org_id, id, workflow_id, workflow_version, status, input, definition, cursor, reason, created_at, updated_at, finished_at)
SELECT ?, printf('run-%08d-0000-4000-8000-000000000000', i), json_extract(?, '$[' || (i % ?) || ']'), 1,
  CASE WHEN i % 100 = 0 THEN 'paused' WHEN i % 100 < 3 THEN 'running' WHEN i % 100 < 10 THEN 'failed' ELSE 'completed' END,
  CASE WHEN ? THEN printf('{"invoice_id":"INV-%07d"}', i) ELSE '{}' END, '{"actions":[]}', '{"step":0}', '',
  ` + at + `, ` + end + `, CASE WHEN i % 100 < 3 THEN NULL ELSE ` + end + ` END FROM g`
			keys = g + `INSERT INTO run_search_keys (org_id, value, created_at, run_id)
SELECT ?, printf('INV-%07d', i), ` + at + `, printf('run-%08d-0000-4000-8000-000000000000', i) FROM g`
			runArgs = []any{lo, hi, orgID, jsonList(ids), workflows, keyed}
			keyArgs = []any{lo, hi, orgID}
		} else {
			at := `timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'`
			end := `timestamptz '2026-01-01 00:00:01+00' + i * interval '1 second'`
			runs = `INSERT INTO runs (org_id, id, workflow_id, workflow_version, status, input, definition, cursor, reason, created_at, updated_at, finished_at)
SELECT ?, 'run-' || lpad(i::text, 8, '0') || '-0000-4000-8000-000000000000', (?::text[])[i % ? + 1], 1,
  CASE WHEN i % 100 = 0 THEN 'paused' WHEN i % 100 < 3 THEN 'running' WHEN i % 100 < 10 THEN 'failed' ELSE 'completed' END,
  CASE WHEN ? THEN '{"invoice_id":"INV-' || lpad(i::text, 7, '0') || '"}' ELSE '{}' END, '{"actions":[]}', '{"step":0}', '',
  ` + at + `, ` + end + `, CASE WHEN i % 100 < 3 THEN NULL ELSE ` + end + ` END
FROM generate_series(?::int, ?::int - 1) AS i`
			keys = `INSERT INTO run_search_keys (org_id, value, created_at, run_id)
SELECT ?, 'INV-' || lpad(i::text, 7, '0'), ` + at + `, 'run-' || lpad(i::text, 8, '0') || '-0000-4000-8000-000000000000'
FROM generate_series(?::int, ?::int - 1) AS i`
			runArgs = []any{orgID, pgTextArray(ids), workflows, keyed, lo, hi}
			keyArgs = []any{orgID, lo, hi}
		}
		if _, err := s.write.ExecContext(ctx, runs, runArgs...); err != nil {
			return nil, fmt.Errorf("seed runs: %w", err)
		}
		if keyed {
			if _, err := s.write.ExecContext(ctx, keys, keyArgs...); err != nil {
				return nil, fmt.Errorf("seed search keys: %w", err)
			}
		}
	}
	// Statistics as autovacuum keeps them on PostgreSQL; SQLite runs without (the store
	// never runs ANALYZE there), so the figures are its planner's without them.
	if s.dialect == dialectPostgres {
		if _, err := s.write.ExecContext(ctx, "ANALYZE runs; ANALYZE run_search_keys"); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func jsonList(ss []string) string {
	out := "["
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("%q", s)
	}
	return out + "]"
}

func pgTextArray(ss []string) string {
	out := "{"
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += `"` + s + `"`
	}
	return out + "}"
}

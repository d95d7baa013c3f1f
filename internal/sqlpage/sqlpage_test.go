package sqlpage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/sqlpage"
)

func TestLimit(t *testing.T) {
	t.Parallel()
	cases := []struct{ asked, want int }{
		{-1, sqlpage.DefaultLimit},
		{0, sqlpage.DefaultLimit},
		{1, 1},
		{sqlpage.MaxLimit, sqlpage.MaxLimit},
		{sqlpage.MaxLimit + 1, sqlpage.MaxLimit},
	}
	for _, c := range cases {
		require.Equal(t, c.want, sqlpage.Limit(svctype.ListOptions{Limit: c.asked}), "limit %d", c.asked)
	}
}

// TestCursorRoundTrip: what a listing encodes decodes to the same key; a time comes back
// in UTC to the microsecond, as the stores keep times.
func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := sqlpage.EncodeCursor("provider", "account:1")
	parts, err := sqlpage.DecodeCursor(c, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"provider", "account:1"}, parts)

	one, err := sqlpage.DecodeCursor(sqlpage.EncodeCursor("name"), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"name"}, one)

	at := time.Date(2026, 12, 7, 14, 0, 0, 123456789, time.FixedZone("CET", 3600))
	gotAt, gotID, err := sqlpage.DecodeTimeCursor(sqlpage.EncodeTimeCursor(at, "id-1"))
	require.NoError(t, err)
	require.Equal(t, "id-1", gotID)
	require.Equal(t, time.UTC, gotAt.Location())
	require.True(t, gotAt.Equal(at.Truncate(time.Microsecond)), "%v", gotAt)
	require.Equal(t, 123456000, gotAt.Nanosecond())
}

// TestMalformedCursor: a cursor no listing issued is ErrMalformedCursor, whatever is wrong
// with it.
func TestMalformedCursor(t *testing.T) {
	t.Parallel()
	long := sqlpage.EncodeCursor(strings.Repeat("x", 800), "id") // 1,072 characters
	cases := map[string]string{
		"not base64":      "not a cursor!",
		"standard base64": "YS9i+w==",
		"too few parts":   sqlpage.EncodeCursor("2026-12-07T14:00:00Z"),
		"too many parts":  sqlpage.EncodeCursor("2026-12-07T14:00:00Z", "id", "more"),
		"not a time":      sqlpage.EncodeCursor("yesterday", "id"),
		"too long":        long,
	}
	for name, c := range cases {
		_, _, err := sqlpage.DecodeTimeCursor(c)
		require.ErrorIs(t, err, sqlpage.ErrMalformedCursor, name)
	}
	_, err := sqlpage.DecodeCursor(long, 2)
	require.ErrorIs(t, err, sqlpage.ErrMalformedCursor, "a cursor over 1024 characters is not decoded")
	atLimit := sqlpage.EncodeCursor(strings.Repeat("x", 765))
	require.Len(t, atLimit, 1020)
	_, err = sqlpage.DecodeCursor(atLimit, 1)
	require.NoError(t, err)
}

type item struct{ n int }

func TestOf(t *testing.T) {
	t.Parallel()
	rows := []item{{1}, {2}, {3}}
	cursor := func(m *item) string { return fmt.Sprint(m.n) }
	conv := func(m *item) (int, error) { return m.n * 10, nil }

	// The query asked for limit+1 rows: a row more means a next page, after the last item.
	page, err := sqlpage.Of(rows, 2, cursor, conv)
	require.NoError(t, err)
	require.Equal(t, []int{10, 20}, page.Items)
	require.Equal(t, "2", page.NextCursor)

	page, err = sqlpage.Of(rows, 3, cursor, conv)
	require.NoError(t, err)
	require.Equal(t, []int{10, 20, 30}, page.Items)
	require.Empty(t, page.NextCursor, "no row more: the last page")

	page, err = sqlpage.Of([]item{}, 2, cursor, conv)
	require.NoError(t, err)
	require.NotNil(t, page.Items, "an empty page lists no item, not null")
	require.Empty(t, page.Items)

	bad := errors.New("undecodable row")
	_, err = sqlpage.Of(rows, 2, cursor, func(m *item) (int, error) {
		if m.n == 2 {
			return 0, bad
		}
		return m.n, nil
	})
	require.ErrorIs(t, err, bad)
}

type rowModel struct {
	bun.BaseModel `bun:"table:page_rows"`

	ID        string    `bun:"id,pk"`
	OrgID     string    `bun:"org_id"`
	CreatedAt time.Time `bun:"created_at"`
}

func key(m *rowModel) (time.Time, string) { return m.CreatedAt, m.ID }
func conv(m *rowModel) (string, error)    { return m.ID, nil }

// openDBs returns a database of each dialect with an empty page_rows table: SQLite in
// memory, and PostgreSQL (a temporary table on one connection) when SVC_TEST_POSTGRES_DSN
// is set.
func openDBs(t *testing.T) map[string]*bun.DB {
	t.Helper()
	ctx := context.Background()
	dbs := map[string]*bun.DB{}
	lite, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	lite.SetMaxOpenConns(1)
	dbs["sqlite"] = bun.NewDB(lite, sqlitedialect.New())
	if dsn := os.Getenv("SVC_TEST_POSTGRES_DSN"); dsn != "" {
		pg, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		pg.SetMaxOpenConns(1) // the temporary table is the connection's
		dbs["postgres"] = bun.NewDB(pg, pgdialect.New())
	}
	for name, db := range dbs {
		t.Cleanup(func() { _ = db.Close() })
		temp := ""
		if name == "postgres" {
			temp = "TEMPORARY "
		}
		_, err := db.ExecContext(ctx, "CREATE "+temp+"TABLE page_rows (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, created_at TIMESTAMP NOT NULL)")
		require.NoError(t, err, name)
	}
	return dbs
}

// TestByCreated: paging by (created_at, id) in either direction visits every row of the
// organization once, in order, ties on created_at broken by id, pages of the limit asked
// for with a cursor on all but the last.
func TestByCreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	rows := []rowModel{
		{ID: "a", OrgID: "org_1", CreatedAt: t0},
		{ID: "c", OrgID: "org_1", CreatedAt: t0.Add(time.Microsecond)},
		{ID: "b", OrgID: "org_1", CreatedAt: t0.Add(time.Microsecond)},
		{ID: "d", OrgID: "org_1", CreatedAt: t0.Add(time.Second)},
		{ID: "e", OrgID: "org_1", CreatedAt: t0.Add(time.Minute)},
		{ID: "x", OrgID: "org_2", CreatedAt: t0.Add(time.Second)},
	}
	for name, db := range openDBs(t) {
		t.Run(name, func(t *testing.T) {
			_, err := db.NewInsert().Model(&rows).Exec(ctx)
			require.NoError(t, err)
			list := func(desc bool, opts svctype.ListOptions) (svctype.Page[string], error) {
				sel := db.NewSelect().Model((*rowModel)(nil)).Where("org_id = ?", "org_1")
				return sqlpage.ByCreated(ctx, sel, desc, opts, key, conv)
			}
			for _, tt := range []struct {
				desc  bool
				limit int
				pages [][]string
			}{
				{false, 2, [][]string{{"a", "b"}, {"c", "d"}, {"e"}}},
				{true, 2, [][]string{{"e", "d"}, {"c", "b"}, {"a"}}},
				{false, 5, [][]string{{"a", "b", "c", "d", "e"}}},
				{true, 3, [][]string{{"e", "d", "c"}, {"b", "a"}}},
			} {
				var got [][]string
				opts := svctype.ListOptions{Limit: tt.limit}
				for {
					page, err := list(tt.desc, opts)
					require.NoError(t, err)
					got = append(got, page.Items)
					if page.NextCursor == "" {
						break
					}
					opts.Cursor = page.NextCursor
				}
				require.Equal(t, tt.pages, got, "desc %v, limit %d", tt.desc, tt.limit)
			}

			_, err = list(true, svctype.ListOptions{Cursor: "not a cursor!"})
			require.ErrorIs(t, err, sqlpage.ErrMalformedCursor)

			_, err = sqlpage.ByCreated(ctx, db.NewSelect().Table("no_such_table"), false, svctype.ListOptions{}, key, conv)
			require.Error(t, err)
			require.NotErrorIs(t, err, sqlpage.ErrMalformedCursor, "a database error is the store's to wrap")
		})
	}
}

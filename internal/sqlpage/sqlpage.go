// Package sqlpage is the paging of listings over bun that the engine's store
// (engine/store) and the gateway's (hosts/gateway/gwstore) share: the page limits, the
// opaque cursors (the last item's sort key, base64) and the keyset query by
// (created_at, id). It owns no error of a store: a cursor that no listing issued is
// ErrMalformedCursor, which each store turns into its own invalid-cursor error, and a
// database error is returned as it is, for the store to wrap. It must not import either
// store.
package sqlpage

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// ErrMalformedCursor: a cursor that no listing issued (not base64, the wrong number of
// parts, a time that does not parse, or longer than any cursor a listing issues).
var ErrMalformedCursor = errors.New("malformed cursor")

const (
	// DefaultLimit is a page's size when the caller asks for none.
	DefaultLimit = 50
	// MaxLimit is the largest page: a larger limit asked for is cut to it.
	MaxLimit = 500
	// maxCursorLen is far above any cursor a listing issues (a time and a UUID, or a
	// name, base64-encoded): a longer one was not issued, and is not decoded.
	maxCursorLen = 1024
)

// Limit is the number of items a page of opts holds.
func Limit(opts svctype.ListOptions) int {
	switch {
	case opts.Limit <= 0:
		return DefaultLimit
	case opts.Limit > MaxLimit:
		return MaxLimit
	}
	return opts.Limit
}

// EncodeCursor is the cursor of an item whose sort key is parts.
func EncodeCursor(parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\x00")))
}

// DecodeCursor returns the n parts of the sort key in cursor, or ErrMalformedCursor.
func DecodeCursor(cursor string, n int) ([]string, error) {
	if len(cursor) > maxCursorLen {
		return nil, ErrMalformedCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		if parts := strings.Split(string(b), "\x00"); len(parts) == n {
			return parts, nil
		}
	}
	return nil, ErrMalformedCursor
}

// EncodeTimeCursor is the cursor of an item sorted by (t, id).
func EncodeTimeCursor(t time.Time, id string) string {
	return EncodeCursor(t.UTC().Format(time.RFC3339Nano), id)
}

// DecodeTimeCursor returns the time and id in cursor, the time in UTC to the microsecond
// (as the stores keep times), or ErrMalformedCursor.
func DecodeTimeCursor(cursor string) (time.Time, string, error) {
	parts, err := DecodeCursor(cursor, 2)
	if err != nil {
		return time.Time{}, "", err
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return time.Time{}, "", ErrMalformedCursor
	}
	return t.UTC().Truncate(time.Microsecond), parts[1], nil
}

// ByCreated finishes a listing of model M by (created_at, id), newest first when desc:
// sel has the organization and the filters; this adds the order, the limit (one row more
// than the page, to know whether another follows), the cursor (an EncodeTimeCursor of the
// last row) and scans the page. A malformed opts.Cursor is ErrMalformedCursor; an error of
// the query or of conv is returned as it is.
func ByCreated[M, T any](ctx context.Context, sel *bun.SelectQuery, desc bool, opts svctype.ListOptions,
	key func(*M) (time.Time, string), conv func(*M) (T, error)) (svctype.Page[T], error) {
	var page svctype.Page[T]
	limit := Limit(opts)
	order, after := "created_at ASC, id ASC", ">"
	if desc {
		order, after = "created_at DESC, id DESC", "<"
	}
	sel = sel.OrderExpr(order).Limit(int64(limit + 1))
	if opts.Cursor != "" {
		at, id, err := DecodeTimeCursor(opts.Cursor)
		if err != nil {
			return page, err
		}
		sel = sel.Where("(created_at "+after+" ? OR (created_at = ? AND id "+after+" ?))", at, at, id)
	}
	var ms []M
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, err
	}
	return Of(ms, limit, func(m *M) string { return EncodeTimeCursor(key(m)) }, conv)
}

// Of turns the rows of a listing query (which asked for limit+1 rows) into a page: at most
// limit items converted by conv, and the cursor of the last one when a row more was found.
func Of[M, T any](ms []M, limit int, cursor func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	page := svctype.Page[T]{Items: make([]T, 0, min(len(ms), limit))}
	for i := range ms {
		if i == limit {
			page.NextCursor = cursor(&ms[i-1])
			break
		}
		item, err := conv(&ms[i])
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, item)
	}
	return page, nil
}

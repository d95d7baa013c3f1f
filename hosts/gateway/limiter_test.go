package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// visitorBundle is a gateway and its runtime in one process, driven without sockets: the
// visitor limit tests send a hundred thousand requests.
type visitorBundle struct {
	gw *gateway.Server
	// h is gw's handler, its answers checked against the contract.
	h     http.Handler
	rt    http.Handler
	clock *clock
}

func setupVisitors(t *testing.T, o gateway.Options) *visitorBundle {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet()})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	b := &visitorBundle{rt: runtime.New(eng, runtime.Options{Logger: testlog.Quiet()}).Handler(), clock: &clock{t: time.Now()}}
	o.Store, o.Runtime, o.Now, o.Logger = gwstore.OpenTest(t, st), b.rt, b.clock.now, testlog.Quiet()
	b.gw = gateway.New(o)
	b.h = checked(t, b.gw.Handler())
	return b
}

// publicForm creates a public form of org on the runtime and returns its id.
func (b *visitorBundle) publicForm(t *testing.T, org string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/external-forms", strings.NewReader(`{"name": "Contact", "is_public": true, "schema": `+emailSchema+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Org-Id", org)
	rec := httptest.NewRecorder()
	b.rt.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var f struct{ ID string }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &f))
	return f.ID
}

// read is a visitor's GET of path from addr (host:port); it returns the status.
func (b *visitorBundle) read(path, addr string) int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = addr
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec.Code
}

// TestMadeUpFormIDsDoNotResetVisitorLimits: a visitor who spent a form's read limit and
// then sends more than a hundred thousand requests to made-up form ids (each a key of the
// limiter table before, which was emptied when it passed 100,000 keys) is still limited on
// the form, and the made-up ids left the table as small as it was. The clock never moves.
func TestMadeUpFormIDsDoNotResetVisitorLimits(t *testing.T) {
	t.Parallel()
	b := setupVisitors(t, gateway.Options{})
	form := b.publicForm(t, "cust-a")
	const visitor = "203.0.113.7:40000"
	for i := range gateway.PublicReads {
		require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, visitor), "read %d", i)
	}
	require.Equal(t, http.StatusTooManyRequests, b.read("/forms/public/"+form, visitor))
	before := b.gw.LimiterLen()

	for i := range gateway.DefaultLimiters + 1 {
		id := fmt.Sprintf("frm-Y3VzdC1h.%032x", i) // the shape of cust-a's ids: no form behind them
		if code := b.read("/forms/public/"+id, visitor); code != http.StatusNotFound && code != http.StatusTooManyRequests {
			t.Fatalf("made-up id %d: %d", i, code)
		}
	}
	require.Equal(t, http.StatusTooManyRequests, b.read("/forms/public/"+form, visitor), "the spent limit holds")
	require.Equal(t, http.StatusTooManyRequests, b.read("/forms/"+form, visitor), "on the hosted page too")
	require.LessOrEqual(t, b.gw.LimiterLen(), before+1, "every made-up id shares one bucket of the visitor")
	require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, "203.0.113.8:40000"), "another visitor has their own count")
}

// TestVisitorLimitsAreBounded: more visitors than the table holds keep it at its bound,
// and the bucket dropped for room is the one idle longest: a visitor who keeps coming back
// keeps their spent limit through the churn.
func TestVisitorLimitsAreBounded(t *testing.T) {
	t.Parallel()
	const bound = 200
	b := setupVisitors(t, gateway.Options{Limiters: bound})
	form := b.publicForm(t, "cust-a")
	const regular = "198.51.100.1:5000"
	for range gateway.PublicReads {
		require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, regular))
	}
	for i := range 4 * bound {
		addr := fmt.Sprintf("10.%d.%d.%d:1000", i>>16&0xff, i>>8&0xff, i&0xff)
		require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, addr), "visitor %d", i)
		if i%(bound/4) == 0 {
			require.Equal(t, http.StatusTooManyRequests, b.read("/forms/public/"+form, regular), "after %d visitors", i)
		}
		require.LessOrEqual(t, b.gw.LimiterLen(), bound)
	}
	require.Equal(t, bound, b.gw.LimiterLen())
	require.Equal(t, http.StatusTooManyRequests, b.read("/forms/public/"+form, regular))

	// An IPv6 visitor is their /64: addresses within it share one count.
	for i := range gateway.PublicReads {
		require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1)), "read %d", i)
	}
	require.Equal(t, http.StatusTooManyRequests, b.read("/forms/public/"+form, "[2001:db8:1:2:ffff::1]:443"))
	require.Equal(t, http.StatusOK, b.read("/forms/public/"+form, "[2001:db8:1:3::1]:443"), "another /64")
}

package retryafter_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/svcflow/svcflow/internal/retryafter"
)

func TestParse(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	in := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"zero seconds", "0", 0, true},
		{"seconds", "7", 7 * time.Second, true},
		{"seconds with spaces around", " 120 ", 2 * time.Minute, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"seconds at the cap", "3600", time.Hour, true},
		{"seconds over the cap", "3601", time.Hour, true},
		{"a day", "86400", time.Hour, true},
		{"seconds past int64", "99999999999999999999999999", time.Hour, true},
		{"IMF-fixdate", in(90 * time.Second), 90 * time.Second, true},
		{"obsolete RFC 850 date", now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true},
		{"asctime date", now.Add(45 * time.Second).Format(time.ANSIC), 45 * time.Second, true},
		{"date now", in(0), 0, true},
		{"date in the past", in(-time.Minute), 0, true},
		{"date long past", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"date over the cap", in(3 * time.Hour), time.Hour, true},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fractional", "1.5", 0, false},
		{"unit", "5s", 0, false},
		{"digits then garbage", "12abc", 0, false},
		{"inner space", "1 2", 0, false},
		{"word", "soon", 0, false},
		{"malformed date", "Wed, 32 Foo 2026 25:00:00 GMT", 0, false},
		{"date without zone", "2026-05-06T07:09:09", 0, false},
	} {
		got, ok := retryafter.Parse(tc.value, now)
		require.Equal(t, tc.ok, ok, "%s: %q", tc.name, tc.value)
		require.Equal(t, tc.want, got, "%s: %q", tc.name, tc.value)
	}
}

func ExampleParse() {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 06 May 2026 07:08:39 GMT", "86400", "1.5"} {
		wait, ok := retryafter.Parse(v, now)
		fmt.Println(wait, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 1h0m0s true
	// 0s false
}

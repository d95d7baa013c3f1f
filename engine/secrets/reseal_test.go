package secrets_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

var dialects = []string{"sqlite", "postgres"}

func put(t *testing.T, st secrets.Store, kr *secrets.Keyring, org, key, value string) {
	t.Helper()
	sealed, id, err := kr.Seal(org, key, []byte(value))
	require.NoError(t, err)
	_, err = st.PutOrgConfig(context.Background(), &secrets.Record{OrgID: org, Key: key, Sealed: sealed, KeyID: id})
	require.NoError(t, err)
}

// all reads every record of every organization, org by org.
func all(t *testing.T, st secrets.Store) []secrets.Record {
	t.Helper()
	ctx := context.Background()
	var out []secrets.Record
	orgs, err := st.ListOrgConfigOrgs(ctx, secrets.ListFilter{ListOptions: svctype.ListOptions{Limit: 500}})
	require.NoError(t, err)
	for _, org := range orgs.Items {
		page, err := st.ListOrgConfig(ctx, org, secrets.ListFilter{ListOptions: svctype.ListOptions{Limit: 500}})
		require.NoError(t, err)
		out = append(out, page.Items...)
	}
	return out
}

func valueOf(org, key string) string { return "value-of-" + org + "-" + key + "-0123456789" }

// TestResealMovesEveryValue: after Reseal every value of every organization is under the
// new key, opens with it alone, and no longer opens with the old key alone; updated_at is
// not touched. Values under a key the keyring lacks are left and reported.
func TestResealMovesEveryValue(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			st := store.OpenTest(t, dialect)
			ctx := context.Background()
			oldKey, newKey, lostKey := newKey(t), newKey(t), newKey(t)
			old := keyring(t, oldKey)
			for o := range 7 {
				for k := range 3 {
					org, key := fmt.Sprintf("org_%d", o), fmt.Sprintf("api:k%d", k)
					put(t, st, old, org, key, valueOf(org, key))
				}
			}
			put(t, st, keyring(t, newKey), "org_new", "api:k", valueOf("org_new", "api:k"))
			before := map[string]time.Time{}
			for _, r := range all(t, st) {
				before[r.OrgID+" "+r.Key] = r.UpdatedAt
			}

			stats, err := secrets.Reseal(ctx, st, keyring(t, newKey, oldKey), secrets.ResealOptions{Grace: time.Millisecond, PageSize: 2})
			require.NoError(t, err)
			require.Equal(t, 21, stats.Resealed)
			require.Equal(t, secrets.KeyID(newKey), stats.KeyID)
			require.Equal(t, 2, stats.Passes, "one pass, and the one that confirms")

			records := all(t, st)
			require.Len(t, records, 22)
			for _, r := range records {
				require.Equal(t, secrets.KeyID(newKey), r.KeyID)
				got, err := keyring(t, newKey).Open(r.OrgID, r.Key, r.Sealed)
				require.NoError(t, err)
				require.Equal(t, valueOf(r.OrgID, r.Key), string(got))
				_, err = old.Open(r.OrgID, r.Key, r.Sealed)
				require.ErrorIs(t, err, secrets.ErrUnknownKey, "the old key alone no longer opens it")
				require.Equal(t, before[r.OrgID+" "+r.Key], r.UpdatedAt, "a reseal is not an update")
			}

			// A value under a key nobody has any more is reported, not dropped.
			put(t, st, keyring(t, lostKey), "org_lost", "api:k", "gone-for-good-0123")
			stats, err = secrets.Reseal(ctx, st, keyring(t, newKey), secrets.ResealOptions{Grace: time.Millisecond})
			require.ErrorIs(t, err, secrets.ErrUnknownKey)
			require.Equal(t, []string{"org_lost api:k"}, stats.Unreadable)
			require.NotContains(t, err.Error(), "gone-for-good")
			r, err := st.GetOrgConfig(ctx, "org_lost", "api:k")
			require.NoError(t, err)
			require.Equal(t, secrets.KeyID(lostKey), r.KeyID)
		})
	}
}

// TestResealWhileWriting: a process that has not seen the new key keeps writing under the
// old one while Reseal runs, then stops once it sees Reseal's work (with one write sealed
// before it saw it); Reseal's later passes move what it wrote, and a write made after
// Reseal read a value is never undone.
func TestResealWhileWriting(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			st := store.OpenTest(t, dialect)
			ctx := context.Background()
			oldKey, newKey := newKey(t), newKey(t)
			stale := keyring(t, oldKey)
			for o := range 20 {
				put(t, st, stale, fmt.Sprintf("org_%02d", o), "api:k", "initial-value-0123456789")
			}
			var (
				wg       sync.WaitGroup
				writes   atomic.Int64
				last     sync.Map // org -> last value written
				writeErr error
			)
			resealed := make(chan struct{}) // Reseal returned
			write := func(org, v string) error {
				sealed, id, err := stale.Seal(org, "api:k", []byte(v))
				if err == nil {
					_, err = st.PutOrgConfig(ctx, &secrets.Record{OrgID: org, Key: "api:k", Sealed: sealed, KeyID: id})
				}
				if err == nil {
					last.Store(org, v)
					writes.Add(1)
				}
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-resealed:
						return
					default:
					}
					if writeErr = write(fmt.Sprintf("org_%02d", i%20), fmt.Sprintf("written-%d-0123456789", i)); writeErr != nil {
						return
					}
					// The process sees the new key once Reseal has moved an organization's
					// values; it had sealed one more value under the old key just before, and
					// commits it, in an organization Reseal has passed: a later pass moves it.
					var left svctype.Page[string]
					left, writeErr = st.ListOrgConfigOrgs(ctx, secrets.ListFilter{NotKeyID: secrets.KeyID(newKey), ListOptions: svctype.ListOptions{Limit: 500}})
					if writeErr != nil {
						return
					}
					if len(left.Items) == 20 {
						continue
					}
					for o := range 20 {
						if org := fmt.Sprintf("org_%02d", o); !slices.Contains(left.Items, org) {
							writeErr = write(org, "late-0123456789")
							return
						}
					}
				}
			}()
			stats, err := secrets.Reseal(ctx, st, keyring(t, newKey, oldKey), secrets.ResealOptions{Grace: 100 * time.Millisecond})
			close(resealed)
			wg.Wait()
			require.NoError(t, writeErr)
			require.NoError(t, err)
			require.Positive(t, writes.Load())
			t.Logf("%s: %d stale writes, stats %+v", dialect, writes.Load(), stats)

			for _, r := range all(t, st) {
				require.Equal(t, secrets.KeyID(newKey), r.KeyID, "%s", r.OrgID)
				got, err := keyring(t, newKey).Open(r.OrgID, r.Key, r.Sealed)
				require.NoError(t, err)
				want := "initial-value-0123456789"
				if v, ok := last.Load(r.OrgID); ok {
					want = v.(string)
				}
				require.Equal(t, want, string(got), "the last write wins, never an older value")
			}
		})
	}
}

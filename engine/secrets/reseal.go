package secrets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// ResealOptions tunes Reseal.
type ResealOptions struct {
	// Grace is how long Reseal waits after a pass before the pass that confirms nothing is
	// left (default 2s): a process that sealed a value under the old key just before it
	// saw the new one commits it within that time, and the confirming pass moves it.
	Grace time.Duration
	// MaxPasses bounds the passes (default 10): values that keep arriving under another
	// key mean some process does not have the new key, which more passes will not fix.
	MaxPasses int
	// PageSize is how many organizations, and values of one, are read at a time (default 100).
	PageSize int
}

// ResealStats is what Reseal did.
type ResealStats struct {
	// KeyID is the master key every value is now under.
	KeyID string
	// Passes over the organizations, the confirming one included.
	Passes int
	// Orgs is how many organizations had values to move (counted once per pass).
	Orgs int
	// Resealed values; Raced: values written by someone else between the read and the
	// reseal (the next pass looks at them again).
	Resealed, Raced int
	// Unreadable values (organization and key name): under a key the keyring does not have,
	// or not opening. They stay as they are; Reseal returns an error naming how many.
	Unreadable []string
}

// Reseal moves every stored value to the keyring's current master key, organization by
// organization, while the service runs: it re-reads the keyring first, then passes over
// the organizations whose values are under another key, opening each such value and
// writing it sealed under the current key, unless it changed meanwhile (the write is a
// compare-and-swap on the sealed bytes, so a concurrent update is never undone). It ends
// with a pass, after ResealOptions.Grace, that finds nothing left to move.
//
// The processes serving must be able to open values under the new key before Reseal
// starts: with a key file, the new key is written to it first (they re-read it when they
// meet the new key id, and before sealing); with SVC_MASTER_KEY, every process has been
// restarted with "new,old".
func Reseal(ctx context.Context, st Store, kr *Keyring, opts ResealOptions) (ResealStats, error) {
	if kr == nil {
		return ResealStats{}, ErrNoMasterKey
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.MaxPasses <= 0 {
		opts.MaxPasses = 10
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if err := kr.Refresh(); err != nil {
		return ResealStats{}, err
	}
	target, err := kr.CurrentKeyID()
	if err != nil {
		return ResealStats{}, err
	}
	stats := ResealStats{KeyID: target}
	unreadable := map[string]bool{}
	for {
		stats.Passes++
		moved, err := resealPass(ctx, st, kr, target, opts.PageSize, &stats, unreadable)
		if err != nil {
			return stats, err
		}
		if moved == 0 && stats.Passes > 1 {
			break
		}
		if stats.Passes >= opts.MaxPasses {
			return stats, fmt.Errorf("secrets: reseal: values under another master key were still being written after %d passes: "+
				"some process does not have key %s", stats.Passes, target)
		}
		select {
		case <-ctx.Done():
			return stats, ctx.Err()
		case <-time.After(opts.Grace):
		}
	}
	if len(stats.Unreadable) > 0 {
		return stats, fmt.Errorf("secrets: reseal: %d values could not be opened and were left as they are: %w",
			len(stats.Unreadable), ErrUnknownKey)
	}
	return stats, nil
}

// resealPass walks the organizations with values under another key than target once, and
// returns how many values it found to move (unreadable ones seen before excluded).
func resealPass(ctx context.Context, st Store, kr *Keyring, target string, pageSize int, stats *ResealStats, unreadable map[string]bool) (int, error) {
	found := 0
	orgs := ListFilter{NotKeyID: target, ListOptions: svctype.ListOptions{Limit: pageSize}}
	for {
		page, err := st.ListOrgConfigOrgs(ctx, orgs)
		if err != nil {
			return found, fmt.Errorf("secrets: reseal: list organizations: %w", err)
		}
		for _, org := range page.Items {
			n, err := resealOrg(ctx, st, kr, org, target, pageSize, stats, unreadable)
			if err != nil {
				return found, err
			}
			if n > 0 {
				stats.Orgs++
			}
			found += n
		}
		if page.NextCursor == "" {
			return found, nil
		}
		orgs.Cursor = page.NextCursor
	}
}

func resealOrg(ctx context.Context, st Store, kr *Keyring, org, target string, pageSize int, stats *ResealStats, unreadable map[string]bool) (int, error) {
	found := 0
	f := ListFilter{NotKeyID: target, ListOptions: svctype.ListOptions{Limit: pageSize}}
	for {
		page, err := st.ListOrgConfig(ctx, org, f)
		if err != nil {
			return found, fmt.Errorf("secrets: reseal: list org %s: %w", org, err)
		}
		for i := range page.Items {
			r := &page.Items[i]
			name := org + " " + r.Key
			if unreadable[name] {
				continue
			}
			found++
			plain, err := kr.Open(org, r.Key, r.Sealed)
			if err != nil {
				unreadable[name] = true
				stats.Unreadable = append(stats.Unreadable, name)
				continue
			}
			sealed, kid, err := kr.Seal(org, r.Key, plain)
			clear(plain)
			if err != nil {
				return found, fmt.Errorf("secrets: reseal: org %s key %q: %w", org, r.Key, err)
			}
			if kid != target {
				return found, fmt.Errorf("secrets: reseal: the current master key changed from %s to %s during the rotation", target, kid)
			}
			switch err := st.ResealOrgConfig(ctx, r, sealed, kid); {
			case err == nil:
				stats.Resealed++
			case errors.Is(err, svctype.ErrConflict), errors.Is(err, svctype.ErrNotFound):
				stats.Raced++
			default:
				return found, fmt.Errorf("secrets: reseal: org %s key %q: %w", org, r.Key, err)
			}
		}
		if page.NextCursor == "" {
			return found, nil
		}
		f.Cursor = page.NextCursor
	}
}

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
	// Orgs is how many organizations had values to move (counted once per pass and
	// collection).
	Orgs int
	// Resealed values; Raced: values written by someone else between the read and the
	// reseal (the next pass looks at them again).
	Resealed, Raced int
	// Unreadable values ("<organization> <name>", the name a value is sealed under: an org
	// config key name, oauth_connection:<id>): under a key the keyring does not have, or
	// not opening. They stay as they are; Reseal returns an error naming how many.
	Unreadable []string
	// Collections are the same counts per collection, in the order given to
	// ResealCollections; the fields above add them up.
	Collections []CollectionStats
}

// CollectionStats is what Reseal did to one SealedCollection.
type CollectionStats struct {
	// Kind is the collection's (SealedCollection.Kind).
	Kind            string
	Orgs            int
	Resealed, Raced int
	Unreadable      []string
}

func (s *ResealStats) sum() {
	s.Orgs, s.Resealed, s.Raced, s.Unreadable = 0, 0, 0, nil
	for _, c := range s.Collections {
		s.Orgs += c.Orgs
		s.Resealed += c.Resealed
		s.Raced += c.Raced
		s.Unreadable = append(s.Unreadable, c.Unreadable...)
	}
}

// SealedValue is one value of a SealedCollection as Reseal sees it.
type SealedValue struct {
	OrgID string
	// ID names the value in its organization, for the collection: an org config key name,
	// a connection id.
	ID string
	// Name is what the value is sealed under together with OrgID (Keyring.Seal's name):
	// the org config key name, oauth_connection:<id>.
	Name   string
	Sealed []byte
	// KeyID is the master key Sealed is under, as stored.
	KeyID string
	// Version is the stored row's version for a collection that keeps one, 0 otherwise;
	// Reseal hands it back to SealedCollection.Reseal as it was read.
	Version int64
}

// A SealedCollection is one kind of value sealed with the keyring (org config, the tokens of
// OAuth connections), as Reseal walks it. Every method that reads or writes a value names
// the organization; Orgs, the one that spans organizations, returns organization ids only.
type SealedCollection interface {
	// Kind says what the values are, in stats, errors and logs ("org config").
	Kind() string
	// Orgs pages the ids of the organizations holding values under another key than
	// f.NotKeyID, in order. It reads no value.
	Orgs(ctx context.Context, f ListFilter) (svctype.Page[string], error)
	// List pages one organization's values under another key than f.NotKeyID.
	List(ctx context.Context, orgID string, f ListFilter) (svctype.Page[SealedValue], error)
	// Reseal writes sealed (under keyID) over old if the stored value is still the one
	// List returned, without making it look updated: ErrConflict when it changed since,
	// ErrNotFound when it is gone. A concurrent write is never undone.
	Reseal(ctx context.Context, old *SealedValue, sealed []byte, keyID string) error
}

// OrgConfig is the org config values of st as a SealedCollection (compare-and-swap on the
// sealed bytes, ResealOrgConfig).
func OrgConfig(st Store) SealedCollection { return orgConfigCollection{st} }

type orgConfigCollection struct{ st Store }

func (orgConfigCollection) Kind() string { return "org config" }

func (c orgConfigCollection) Orgs(ctx context.Context, f ListFilter) (svctype.Page[string], error) {
	return c.st.ListOrgConfigOrgs(ctx, f)
}

func (c orgConfigCollection) List(ctx context.Context, orgID string, f ListFilter) (svctype.Page[SealedValue], error) {
	page, err := c.st.ListOrgConfig(ctx, orgID, f)
	out := svctype.Page[SealedValue]{NextCursor: page.NextCursor, Items: make([]SealedValue, len(page.Items))}
	for i, r := range page.Items {
		out.Items[i] = SealedValue{OrgID: r.OrgID, ID: r.Key, Name: r.Key, Sealed: r.Sealed, KeyID: r.KeyID}
	}
	return out, err
}

func (c orgConfigCollection) Reseal(ctx context.Context, old *SealedValue, sealed []byte, keyID string) error {
	return c.st.ResealOrgConfig(ctx, &Record{OrgID: old.OrgID, Key: old.ID, Sealed: old.Sealed, KeyID: old.KeyID}, sealed, keyID)
}

// Reseal moves every org config value of st to the keyring's current master key:
// ResealCollections over OrgConfig(st) alone.
func Reseal(ctx context.Context, st Store, kr *Keyring, opts ResealOptions) (ResealStats, error) {
	return ResealCollections(ctx, kr, opts, OrgConfig(st))
}

// ResealCollections moves every value of the collections to the keyring's current master
// key, organization by organization, while the service runs: it re-reads the keyring
// first, then passes over the organizations whose values are under another key, collection
// after collection, opening each such value and writing it sealed under the current key,
// unless it changed meanwhile (the write is a compare-and-swap, so a concurrent update is
// never undone). It ends with a pass over every collection, after ResealOptions.Grace, that
// finds nothing left to move.
//
// The processes serving must be able to open values under the new key before it starts:
// with a key file, the new key is written to it first (they re-read it when they meet the
// new key id, and before sealing); with SVC_MASTER_KEY, every process has been restarted
// with "new,old".
func ResealCollections(ctx context.Context, kr *Keyring, opts ResealOptions, cols ...SealedCollection) (stats ResealStats, err error) {
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
	stats = ResealStats{KeyID: target, Collections: make([]CollectionStats, len(cols))}
	for i, c := range cols {
		stats.Collections[i].Kind = c.Kind()
	}
	defer stats.sum()
	unreadable := map[string]bool{}
	for {
		stats.Passes++
		moved := 0
		for i, c := range cols {
			n, err := resealPass(ctx, c, kr, target, opts.PageSize, &stats.Collections[i], unreadable)
			if err != nil {
				return stats, err
			}
			moved += n
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
	stats.sum()
	if len(stats.Unreadable) > 0 {
		return stats, fmt.Errorf("secrets: reseal: %d values could not be opened and were left as they are: %w",
			len(stats.Unreadable), ErrUnknownKey)
	}
	return stats, nil
}

// resealPass walks the organizations with values of c under another key than target once,
// and returns how many values it found to move (unreadable ones seen before excluded).
func resealPass(ctx context.Context, c SealedCollection, kr *Keyring, target string, pageSize int, stats *CollectionStats, unreadable map[string]bool) (int, error) {
	found := 0
	orgs := ListFilter{NotKeyID: target, ListOptions: svctype.ListOptions{Limit: pageSize}}
	for {
		page, err := c.Orgs(ctx, orgs)
		if err != nil {
			return found, fmt.Errorf("secrets: reseal %s: list organizations: %w", stats.Kind, err)
		}
		for _, org := range page.Items {
			n, err := resealOrg(ctx, c, kr, org, target, pageSize, stats, unreadable)
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

func resealOrg(ctx context.Context, c SealedCollection, kr *Keyring, org, target string, pageSize int, stats *CollectionStats, unreadable map[string]bool) (int, error) {
	found := 0
	f := ListFilter{NotKeyID: target, ListOptions: svctype.ListOptions{Limit: pageSize}}
	for {
		page, err := c.List(ctx, org, f)
		if err != nil {
			return found, fmt.Errorf("secrets: reseal %s: list org %s: %w", stats.Kind, org, err)
		}
		for i := range page.Items {
			v := &page.Items[i]
			name := org + " " + v.Name
			seen := stats.Kind + "\x00" + name
			if unreadable[seen] {
				continue
			}
			found++
			plain, err := kr.Open(org, v.Name, v.Sealed)
			if err != nil {
				unreadable[seen] = true
				stats.Unreadable = append(stats.Unreadable, name)
				continue
			}
			sealed, kid, err := kr.Seal(org, v.Name, plain)
			clear(plain)
			if err != nil {
				return found, fmt.Errorf("secrets: reseal %s: org %s %q: %w", stats.Kind, org, v.Name, err)
			}
			if kid != target {
				return found, fmt.Errorf("secrets: reseal: the current master key changed from %s to %s during the rotation", target, kid)
			}
			switch err := c.Reseal(ctx, v, sealed, kid); {
			case err == nil:
				stats.Resealed++
			case errors.Is(err, svctype.ErrConflict), errors.Is(err, svctype.ErrNotFound):
				stats.Raced++
			default:
				return found, fmt.Errorf("secrets: reseal %s: org %s %q: %w", stats.Kind, org, v.Name, err)
			}
		}
		if page.NextCursor == "" {
			return found, nil
		}
		f.Cursor = page.NextCursor
	}
}

package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/storage"
)

// A run's context key read whole, for an answer that streams it out (the NDJSON and CSV
// answers of GET /runs/{runId}/context/{key}): a matcher's 46,000 pairs leave a few stored
// parts at a time, as they are stored, never joined into one value nor decoded.

// StreamPartsRead is how many parts of a key stored in parts one read takes while the
// key is streamed: about 1 MiB (PartBytes each), what a stream holds of the key at once.
const StreamPartsRead = 8

// ErrContextChanged is a key rewritten while it was streamed: the answer already sent holds
// parts of two values, and must be ended as a failure.
var ErrContextChanged = errors.New("the context key was rewritten while it was read")

// ContextStream is one key of a run to be read whole. A value stored whole is in Whole (an
// array or not); an array stored in parts has Whole nil and Length elements, read by Parts.
type ContextStream struct {
	Key   string
	Whole json.RawMessage
	// Length is the length of an array stored in parts.
	Length int

	store        storage.Store
	orgID, runID string
	head         storage.ContextSlice
}

// IsArray reports whether the value is a JSON array.
func (s *ContextStream) IsArray() bool {
	if s.Whole == nil {
		return true
	}
	t := bytes.TrimLeft(s.Whole, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// RunContextStream returns the context key key of a run, to be read whole: a value stored
// whole is read now; of an array stored in parts only its description is, and Parts reads
// the parts. A run without the key is ErrNoContextKey, a run that is not the org's
// ErrNotFound, as for RunContext.
func (e *Core) RunContextStream(ctx context.Context, orgID, runID, key string) (*ContextStream, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	head, err := e.store.ContextSlice(ctx, orgID, runID, key, 0, 0)
	if err != nil {
		return nil, err
	}
	s := &ContextStream{Key: key, store: e.store, orgID: orgID, runID: runID, head: head}
	switch {
	case head.Parts != nil:
		s.Length = head.Length
		return s, nil
	case head.Found:
		s.Whole = head.Whole
	default:
		// As RunContext: a missing run from a missing key, and the one key not stored.
		run, err := e.store.GetRun(ctx, orgID, runID)
		if err != nil {
			return nil, err
		}
		if key != runIDKey {
			return nil, fmt.Errorf("%w: run %s has no key %q", ErrNoContextKey, runID, key)
		}
		s.Whole, _ = json.Marshal(run.ID)
	}
	if s.IsArray() && !gjson.ValidBytes(s.Whole) {
		return nil, fmt.Errorf("context key %q of run %s: the stored array is not valid JSON", key, runID)
	}
	return s, nil
}

// Parts yields an array's parts in order, each a JSON array of consecutive elements as it
// is stored (a value stored whole is its one part): StreamPartsRead parts a read, each read
// once the parts before it were used. A key rewritten while it was read (another length or
// part size, another number of parts or bytes when the last part was read) ends the
// sequence with ErrContextChanged. A value that is not an array yields nothing.
func (s *ContextStream) Parts(ctx context.Context) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		if s.Whole != nil {
			if s.IsArray() {
				yield(s.Whole, nil)
			}
			return
		}
		for first := 0; first < s.head.Count; first += StreamPartsRead {
			last := min(first+StreamPartsRead, s.head.Count) - 1
			parts, err := s.store.ContextParts(ctx, s.orgID, s.runID, s.Key, first, last)
			if err != nil {
				yield(nil, s.changed(ctx, err))
				return
			}
			for _, p := range parts {
				// Written from encoded or checked JSON (as pageParts trusts them): only
				// their brackets are checked.
				if len(p) < 2 || p[0] != '[' || p[len(p)-1] != ']' {
					yield(nil, fmt.Errorf("context key %q of run %s: a stored part is not a JSON array", s.Key, s.runID))
					return
				}
				if !yield(p, nil) {
					return
				}
			}
		}
		if err := s.changed(ctx, nil); err != nil {
			yield(nil, err)
		}
	}
}

// changed reads the key's description again: ErrContextChanged when it is not the one the
// stream started from, else err (nil when the parts were all read).
func (s *ContextStream) changed(ctx context.Context, err error) error {
	now, herr := s.store.ContextSlice(ctx, s.orgID, s.runID, s.Key, 0, 0)
	if herr != nil {
		return errors.Join(err, herr)
	}
	if now.Parts == nil || now.Length != s.head.Length || now.Per != s.head.Per || now.Count != s.head.Count || now.Size != s.head.Size {
		return fmt.Errorf("context key %q of run %s: %w", s.Key, s.runID, ErrContextChanged)
	}
	return err
}

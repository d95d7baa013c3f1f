package store

import (
	"context"
	"database/sql"
	"errors"
)

// errNotPrepared: the statements were closed (the Store is closing) under a waiting claim.
var errNotPrepared = errors.New("statements not prepared (store closing)")

// A claim's write rides in the transaction that holds the SQLite writer when it comes.
//
// A claim on SQLite is a read of the candidates (the read pool) and one UPDATE of the
// picked jobs' leases on the writer. On its own that UPDATE is a write transaction of its
// own: the writer's locks taken and given back, a commit, a WAL frame for the jobs page,
// about a tenth of a run's CPU on bench-runs, where a claim follows each run's end. Yet
// the writer is nearly always held when a worker claims (by a step commit, or by Execute),
// and that transaction has the jobs page written already. So ClaimJobs leaves its
// statement with the holder (carryClaim), which runs it, the same statement with the same
// picks and the same lease checks, just before it commits (carryClaims), and hands the
// claimed jobs back once the commit is done (settleCarried). A holder whose transaction
// does not commit, or that is not a transaction that carries (a claim, a lease extension,
// a store beside the engine's), runs what it was left on its own before it lets the
// writer go (unlockWriter): a claim waits at most for the writer's current holder, never
// for the queue behind it. The leases, the order and the fairness of claims are those of
// ClaimJobs, whichever transaction commits them (docs/decisions.md, "A claim rides in the
// writer's transaction").

// carriedClaim is one claim's UPDATE (sqlClaimJobs and its arguments) waiting for the
// writer, and what it returned.
type carriedClaim struct {
	ctx  context.Context
	args []any
	jobs []jobModel
	err  error
	done chan struct{} // closed once jobs and err are final: committed, or failed
}

// carryClaim leaves c with the writer's holder and reports true, or reports false when the
// writer is free. A holder runs what it was left before it lets the writer go.
func (s *Store) carryClaim(c *carriedClaim) bool {
	s.writer.mu.Lock()
	defer s.writer.mu.Unlock()
	if !s.writer.locked {
		return false
	}
	s.carried = append(s.carried, c)
	return true
}

// takeCarried returns the claims left with the holder, and leaves none.
func (s *Store) takeCarried() []*carriedClaim {
	s.writer.mu.Lock()
	defer s.writer.mu.Unlock()
	taken := s.carried
	s.carried = nil
	return taken
}

// carryClaims runs the claims left with the holder in its transaction tx, before it
// commits. A claim whose statement fails changes nothing (SQLite undoes that statement
// alone) and its error is its own: the transaction goes on.
func (s *Store) carryClaims(ctx context.Context, tx *sql.Tx) []*carriedClaim {
	st := s.querier.fast()
	if st == nil {
		return nil
	}
	carried := s.takeCarried()
	for _, c := range carried {
		c.err = s.querier.queryTxInto(ctx, tx, st.claimJobs, &c.jobs, c.args...)
	}
	return carried
}

// settleCarried hands the carried claims their jobs once their transaction committed, or
// leaves them again, for unlockWriter to run on their own, when it did not.
func (s *Store) settleCarried(carried []*carriedClaim, committed bool) {
	if len(carried) == 0 {
		return
	}
	if committed {
		for _, c := range carried {
			close(c.done)
		}
		return
	}
	for _, c := range carried {
		c.jobs, c.err = nil, nil
	}
	s.writer.mu.Lock()
	s.carried = append(carried, s.carried...)
	s.writer.mu.Unlock()
}

// claimAlone runs c in a transaction of its own: the writer must be held.
func (s *Store) claimAlone(c *carriedClaim) {
	if st := s.querier.fast(); st != nil {
		c.err = s.querier.queryInto(c.ctx, st.claimJobs, &c.jobs, c.args...)
	} else {
		c.err = errNotPrepared
	}
	close(c.done)
}

// unlockWriter lets the SQLite writer go, once it has run on their own the claims left
// with it: none is left once the writer is free (carryClaim sees it free under the same
// lock).
func (s *Store) unlockWriter() {
	for {
		s.writer.mu.Lock()
		if len(s.carried) == 0 {
			s.writer.unlockHeld()
			s.writer.mu.Unlock()
			return
		}
		taken := s.carried
		s.carried = nil
		s.writer.mu.Unlock()
		for _, c := range taken {
			s.claimAlone(c)
		}
	}
}

package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wake one claimer a job. Every process listening on jobsChannel hears every job made
// claimable, and every one of them with a free slot used to claim at once: with four
// worker processes, three of the four claims found nothing (3.4 empty claims a run,
// docs/performance.md). Now the processes that claim (whose Store has job watchers: the
// workers) open their LISTEN connection under one application_name, claimerName, and each
// reads every claimerRefresh who they are (their listening backends' pids, from
// pg_stat_activity) and its own place among them. A notification's payload is the job's
// id; the claimer whose place is id modulo their number wakes, the others do not. While
// two claimers' views differ (one has just started or stopped), a job may wake two of
// them, or none: then it waits for the next claim a slot freed or a poll makes, as every
// job did before notifications. A notification without an id wakes every claimer.

// claimerRefresh is how often a claimer reads who the claimers are.
const claimerRefresh = time.Second

// errRejoin ends a LISTEN connection opened before the Store had job watchers, to reopen
// it as a claimer's.
var errRejoin = errors.New("store: the listening connection reopens as a claimer's")

// jobsChannelOf is the channel of jobs made claimable in the database and search_path of
// cfg: jobsChannel, and with a search_path set a hash of it too, so that the stores of
// two schemas of one database (tests, or two deployments) do not wake each other's
// workers, nor take each other's turns.
func jobsChannelOf(cfg *pgx.ConnConfig) string {
	path := cfg.RuntimeParams["search_path"]
	if path == "" {
		return jobsChannel
	}
	sum := sha256.Sum256([]byte(path))
	return jobsChannel + "_" + hex.EncodeToString(sum[:6])
}

// jobsChan is q's jobsChannel, jobsChannel when unset.
func (q *querier) jobsChan() string {
	if q.jobsChannel == "" {
		return jobsChannel
	}
	return q.jobsChannel
}

// claimerName is the application_name of the claimers' LISTEN connections: the
// connection's own name, then a hash of the database and search_path they share (the
// jobs table they claim from), within PostgreSQL's 63 bytes.
func claimerName(cfg *pgx.ConnConfig) string {
	sum := sha256.Sum256([]byte(cfg.Database + "\x00" + cfg.RuntimeParams["search_path"]))
	app := cfg.RuntimeParams["application_name"]
	if app == "" {
		app = "svcflow"
	}
	if len(app) > 40 {
		app = app[:40]
	}
	return app + " claimer " + hex.EncodeToString(sum[:6])
}

// claimTurn is this Store's place among the claimers: place of size, or size 0 when
// unknown (every job wakes it).
type claimTurn struct {
	mu      sync.Mutex
	place   int
	size    int
	changed chan<- struct{} // told of each set without blocking, when a test asks
}

func (t *claimTurn) set(place, size int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.place, t.size = place, size
	if t.changed != nil {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// mine reports whether the job named by payload is this claimer's to wake for.
func (t *claimTurn) mine(payload string) bool {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.size <= 0 || t.place < 0 {
		return true
	}
	return int(id%int64(t.size)) == t.place
}

// followClaimers reads who the claimers named name are, now and every claimerRefresh,
// until ctx ends; pid is this Store's listening backend.
func (s *Store) followClaimers(ctx context.Context, name string, pid uint32) {
	t := time.NewTicker(claimerRefresh)
	defer t.Stop()
	for {
		var pids []int64
		err := s.read.NewRaw(`SELECT pid FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()`, name).
			Scan(ctx, &pids)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			slog.Warn("store: reading the worker processes that claim jobs failed; every job wakes this one", "err", err)
			s.listen.turn.set(-1, 0)
		default:
			slices.Sort(pids)
			s.listen.turn.set(slices.Index(pids, int64(pid)), len(pids))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

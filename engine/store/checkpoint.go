package store

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// SQLite's checkpoints off the commit path. With automatic checkpoints, the commit that
// takes the WAL past its threshold copies the WAL into the database file before it returns,
// holding the one writer: with the WAL at ~64 MiB that commit took 200-250 ms (a matcher
// run's commit of 12 MB of pairs was the one to pay it every few runs, and every step
// queued behind it). The writer connection runs with wal_autocheckpoint(0) instead, and a
// goroutine with a connection of its own checkpoints every checkpointEvery, PASSIVE: it
// copies what no reader still needs, never waits for a reader or the writer, and the writer
// goes on appending to the WAL meanwhile (SQLite's WAL allows one checkpoint beside one
// writer). The writer starts the WAL over from its beginning at its next transaction once
// a checkpoint has copied all of it.

// checkpointEvery is how often the checkpointer runs: at make bench-runs' ~1,800 commits a
// second of a few pages each, about the 16,000 pages the commits used to checkpoint at.
// Between two, the many versions of a hot page (a run's row, the jobs table's) are copied
// once: every 200 ms, the same bench lost 5-10 % of its runs/s to the extra copying.
const checkpointEvery = 2 * time.Second

// checkpointer runs PASSIVE checkpoints of one SQLite file until stopped.
type checkpointer struct {
	name string // the database's DSN
	db   *sql.DB
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	// runs and frames count the checkpoints made and the WAL frames they copied.
	runs, frames int64
}

// startCheckpointer opens its own connection to the file at name (the writer's DSN) and
// starts checkpointing every every.
func startCheckpointer(name string, every time.Duration) (*checkpointer, error) {
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{name: name, db: db, stop: stop, done: make(chan struct{})}
	go c.loop(ctx, every)
	return c, nil
}

func (c *checkpointer) loop(ctx context.Context, every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = c.checkpoint(ctx) // a failed one is retried at the next tick
	}
}

// checkpoint runs one PASSIVE checkpoint and counts what it copied.
func (c *checkpointer) checkpoint(ctx context.Context) error {
	var busy, log, copied int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
		return err
	}
	c.mu.Lock()
	c.runs++
	if copied > 0 {
		c.frames += copied
	}
	c.mu.Unlock()
	return nil
}

// close stops the checkpointer and closes its connection. The database's last connection
// to close checkpoints what is left, as SQLite does.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}

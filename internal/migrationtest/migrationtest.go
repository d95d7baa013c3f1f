// Package migrationtest checks a schema history written the way the engine's store
// (engine/store/migrations) and the gateway's (hosts/gateway/gwstore/migrations) write
// theirs: All, a list of bun migrations named by their ids, in order, one file per
// migration named <id>_<what it does>.go. Each check returns an error saying what is wrong,
// for a migrations package's tests to require none. It is for tests only.
package migrationtest

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/uptrace/bun/migrate"
)

var (
	idForm   = regexp.MustCompile(`^\d{14}$`)
	fileForm = regexp.MustCompile(`^(\d{14})_[a-z0-9_]+\.go$`)
)

// History checks that all is the shipped migrations under their ids, in the order bun runs
// them (by id), each once, each an id of the form YYYYMMDDhhmmss with a comment and
// something to run. A migration's id never changes once it has shipped: a database
// migrated by an older build would run it again under its new id.
func History(all []migrate.Migration, shipped []string) error {
	names := make([]string, 0, len(all))
	for i, m := range all {
		switch {
		case !idForm.MatchString(m.Name):
			return fmt.Errorf("migration %q: an id is a timestamp, YYYYMMDDhhmmss", m.Name)
		case m.Comment == "":
			return fmt.Errorf("migration %s: no comment", m.Name)
		case m.Up == nil:
			return fmt.Errorf("migration %s: nothing to run (Up is nil)", m.Name)
		case i > 0 && names[i-1] >= m.Name:
			return fmt.Errorf("migration %s after %s: ids in strictly increasing order, a new migration goes at the end", m.Name, names[i-1])
		}
		names = append(names, m.Name)
	}
	if !slices.Equal(shipped, names) {
		return fmt.Errorf("the migrations are %v, the shipped ones %v: a shipped id never changes, a new one is appended to both", names, shipped)
	}
	return nil
}

// Files checks that the Go files of dir, but its tests and the files named in notMigrations,
// are the migrations of all, each named by its id (a migration in two parts may have two
// files with its id).
func Files(dir string, all []migrate.Migration, notMigrations ...string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || slices.Contains(notMigrations, name) {
			continue
		}
		m := fileForm.FindStringSubmatch(name)
		if m == nil {
			return fmt.Errorf("%s: a migration's file is <id>_<what it does>.go", name)
		}
		ids = append(ids, m[1])
	}
	ids = slices.Compact(ids)
	names := make([]string, 0, len(all))
	for _, m := range all {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, ids) {
		return fmt.Errorf("the migrations are %v, the files' ids %v: one file (or two) per migration, named by its id", names, ids)
	}
	return nil
}

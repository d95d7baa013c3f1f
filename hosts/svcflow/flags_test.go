package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// commandFlags is what each command takes, written out here rather than read from the
// code: the table the code must agree with.
var commandFlags = func() map[string][]string {
	engine := []string{"io-concurrency", "io-per-org", "oauth-redirect-url", "allow-private-targets", "lease", "documents-dir", "otlp-endpoint"}
	api := []string{"runtime-addr", "legacy-create-from-ai", "max-document-mib"}
	gw := []string{"gateway-addr", "rate", "burst", "smtp-addr", "smtp-from", "smtp-user", "dev-show-codes", "dev-token"}
	join := func(groups ...[]string) []string { return slices.Concat(groups...) }
	return map[string][]string{
		"serve":             join([]string{"db", "ops-addr", "workers"}, engine, api, gw),
		"runtime":           join([]string{"db", "ops-addr"}, engine, api),
		"gateway":           join([]string{"db", "ops-addr", "runtime-url"}, gw),
		"worker":            join([]string{"db", "ops-addr", "workers", "health-addr"}, engine),
		"migrate":           {"db"},
		"rotate-master-key": {"db", "grace"},
		"openapi":           {"doc", "version"},
	}
}()

var helpFlag = regexp.MustCompile(`(?m)^  --([a-z-]+)`)

// TestCommandHelp: `svcflow <command> --help` (and `svcflow help <command>`) answers 0 on
// stdout with the command's usage line and exactly its flags.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	require.Len(t, commands, len(commandFlags))
	for name, want := range commandFlags {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
				var out, errOut bytes.Buffer
				require.Equal(t, 0, run(args, &out, &errOut), errOut.String())
				require.Empty(t, errOut.String())
				require.True(t, strings.HasPrefix(out.String(), "usage: svcflow "+name+" "), out.String())
				var got []string
				for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
					got = append(got, m[1])
				}
				want := slices.Clone(want)
				sort.Strings(want)
				require.Equal(t, want, got, "%v", args)
			}
		})
	}
}

// TestFlagOfAnotherCommand: every flag a command does not take is refused (exit 2, before
// anything runs) with a message naming the flag and the commands that take it; a flag no
// command has, and an argument where only flags go, are refused too.
func TestFlagOfAnotherCommand(t *testing.T) {
	t.Parallel()
	takers := map[string][]string{}
	for name, flags := range commandFlags {
		for _, f := range flags {
			takers[f] = append(takers[f], name)
		}
	}
	for name, flags := range commandFlags {
		for f, by := range takers {
			if slices.Contains(flags, f) {
				continue
			}
			var out, errOut bytes.Buffer
			require.Equal(t, 2, run([]string{name, "--" + f + "=x"}, &out, &errOut), "%s --%s", name, f)
			require.Empty(t, out.String())
			msg := errOut.String()
			require.Contains(t, msg, "svcflow "+name+": --"+f+" is for ", "%s --%s", name, f)
			for _, c := range by {
				require.Contains(t, msg, c, "%s --%s", name, f)
			}
		}
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"help", "license"}, &out, &errOut))
	require.Contains(t, out.String(), "svcflow license issue")
	out.Reset()
	require.Equal(t, 2, run([]string{"migrate", "--nope"}, &out, &errOut))
	require.Contains(t, errOut.String(), "no flag --nope")
	errOut.Reset()
	require.Equal(t, 2, run([]string{"migrate", "now"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unexpected argument "now"`)
	errOut.Reset()
	require.Equal(t, 2, run([]string{"worker", "--workers", "many"}, &out, &errOut))
	require.Contains(t, errOut.String(), "svcflow worker: invalid value")
	require.Empty(t, out.String())
}

// TestMigrateRefusesServeFlags is the issue's case through the real binary: `migrate
// --smtp-addr x --dev-show-codes` used to migrate and exit 0 without a word. It exits 2
// naming the flag, and opens no database (none is made in its directory).
func TestMigrateRefusesServeFlags(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "migrate", "--smtp-addr", "x", "--dev-show-codes")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &exit)
	require.Equal(t, 2, exit.ExitCode())
	require.Contains(t, stderr.String(), "--smtp-addr is for serve and gateway, not migrate")
	require.Empty(t, stdout.String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "migrate ran")

	help := exec.Command(bin, "migrate", "--help")
	help.Dir = dir
	out, err := help.Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "--db DSN")
	require.NotContains(t, string(out), "--smtp-addr")
}

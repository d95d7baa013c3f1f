package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/telemetry/telemetrytest"
)

// The documentation's shell examples, run as a reader would paste them.
//
// Every ```sh block of README.md and of each docs/ page is run, in the page's order and in
// one bash per page (so a variable one block sets serves the next), against a `svcflow
// serve` of its own on a fresh SQLite file, from the repository's root. The page's
// localhost:8080 (the runtime) and localhost:8081 (the gateway) are that process's
// addresses. curl is a function that fails the page when an answer is not 2xx, unless the
// command's comment shows the status it expects (`# -> 422 …`); a pipe into grep fails it
// when the line is not there. The page's model is a fake OpenAI-compatible server
// (OPENAI_BASE_URL, OPENAI_API_KEY), its `svcflow` the binary under test, its ./svcflow.db
// that process's database and its /backups a temporary directory. A block that cannot run here (it needs a mailbox, a Google
// account, a model key) says why on the line before it: `<!-- not run: REASON -->`. A block
// for PostgreSQL (`<!-- postgres: … -->` before it) runs when SVC_TEST_POSTGRES_DSN is set,
// its $DB and $EMPTY_DB two new databases on that server. The ports 18080, 18081, 19090 and
// 19091 a page starts processes on are free ones.

// docPages are the pages whose examples run; decisions.md and performance.md hold none.
var docPages = []string{
	"README.md",
	"docs/workflows.md", "docs/reconciliation.md", "docs/gateway.md", "docs/integrations.md", "docs/people-and-forms.md", "docs/agents.md", "docs/process-studio.md",
	"docs/console.md", "docs/api.md", "docs/embedding.md",
	"docs/binary.md", "docs/operations.md", "docs/development.md",
}

// docsAgentScript is docs/agents.md's model: it reconciles the objective's records with the
// recon action, asks a person about the difference, and answers.
var docsAgentScript = []modelTurn{
	{"recon", `{"bank": [{"inv": "A", "amount": 10}, {"inv": "B", "amount": 20}], "erp": [{"inv": "A", "amount": 10}, {"inv": "B", "amount": 21.5}]}`,
		"I reconcile the two statements with recon."},
	{"__pause_for_human__", `{"question": "Invoice B differs by 1.50: write it off?", "options": ["write off", "chase"]}`,
		"Invoice B differs; writing it off is a person's decision."},
	{"__complete__", `{"answer": "` + docsAgentAnswer + `", "confidence": 0.9, "match_claim": "discrepancies"}`,
		"The person approved the write-off."},
}

// docsDraft is docs/process-studio.md's drafted workflow: a bundle as the model answers it.
const docsDraft = `{"workflow_name": "Log tickets", "svc_workflow_definition": {"actions": [
  {"type": "custom-table", "properties": {"table": "tickets", "operation": "write",
    "fields": {"subject": "{{input.subject}}", "priority": "{{input.priority}}"}}}]},
  "actions_to_register": [], "custom_tables_to_create": [{"name": "tickets", "fields": {"subject": "text", "priority": "text"}}],
  "workflow_description": "Logs each support ticket's subject and priority.", "external_dependency_notes": []}`

const docsAgentAnswer = "Invoice A matches; invoice B differs by 1.50 (bank 20.00, ERP 21.50), written off as approved."

// docBlock is one ```sh block of a page.
type docBlock struct {
	line   int    // where it starts, 1-based
	text   string // the commands
	notRun string // why it does not run, when it does not
	pg     bool   // it needs $DB, a PostgreSQL database
}

var (
	fenceOpen = regexp.MustCompile("^( *)```(\\w*)\\s*$")
	notRunTag = regexp.MustCompile(`^<!-- not run: (.+?) -->$`)
	pgTag     = regexp.MustCompile(`^<!-- postgres: (.+?) -->$`)
	// a comment that names the status a command answers: `# -> 422 {...}` or `# → 404`
	expectStatus = regexp.MustCompile(`#\s*(?:->|→)\s*([1-5][0-9][0-9])\b`)
)

// shellBlocks reads a page's ```sh blocks.
func shellBlocks(page string) ([]docBlock, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		start, indent := i, m[1]
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent)) // a block in a list item
		}
		if m[2] != "sh" {
			continue
		}
		blk := docBlock{line: start + 1, text: strings.Join(body, "\n")}
		for j := start - 1; j >= 0 && j >= start-2; j-- {
			if n := notRunTag.FindStringSubmatch(strings.TrimSpace(lines[j])); n != nil {
				blk.notRun = n[1]
			}
			if pgTag.MatchString(strings.TrimSpace(lines[j])) {
				blk.pg = true
			}
		}
		blocks = append(blocks, blk)
	}
	return blocks, nil
}

// expectations marks each curl command whose comment names a status: `curl` becomes
// `curl --svc-expect NNN` on the command's first line. A command continued with `\` is
// one command; its comment is on its last line or on the comment line right after it.
func expectations(script string) string {
	lines := strings.Split(script, "\n")
	for i := 0; i < len(lines); i++ {
		first := i
		for i < len(lines)-1 && strings.HasSuffix(strings.TrimRight(lines[i], " "), "\\") {
			i++
		}
		m := expectStatus.FindStringSubmatch(lines[i])
		if m == nil && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
			m = expectStatus.FindStringSubmatch(lines[i+1]) // the answer shown on the next line
		}
		if m == nil {
			continue
		}
		for j := first; j <= i; j++ {
			if k := strings.Index(lines[j], "curl "); k >= 0 && !strings.HasPrefix(strings.TrimSpace(lines[j]), "#") {
				lines[j] = lines[j][:k] + "curl --svc-expect " + m[1] + " " + lines[j][k+len("curl "):]
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

// docPrelude is run before a page's blocks: strict bash, and curl checking each answer's
// status (2xx, or what the command's comment expects).
const docPrelude = `set -euo pipefail
# As README's tour defines them.
H='-H Content-Type:application/json -H X-Org-Id:acme'
id() { grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4; }
curl() {
  local want=2
  if [ "${1:-}" = --svc-expect ]; then want=$2; shift 2; fi
  local out code
  out=$(command curl --no-progress-meter --write-out '\n%{http_code}' "$@") || { echo "svc-docs: curl failed: curl $*" >&2; return 1; }
  code=${out##*$'\n'}
  out=${out%$'\n'*}
  printf '%s\n' "$out"
  case $code in
    "$want"*) ;;
    *) printf 'svc-docs: HTTP %s (want %s): curl %s\n%s\n' "$code" "$want" "$*" "$out" >&2; return 1 ;;
  esac
}
`

func TestDocsExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts svcflow serve once a page")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	t.Parallel()
	bin := buildBinary(t)
	model := newScriptedOpenAI(t, 0, docsAgentScript)
	model.draft = docsDraft
	collector := telemetrytest.New(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, page := range docPages {
		t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
			blocks, err := shellBlocks(filepath.Join(root, page))
			require.NoError(t, err)
			var script strings.Builder
			script.WriteString(docPrelude)
			if page != "README.md" {
				// A page's examples follow the tour: they may use its $WF and its tables.
				tour, err := shellBlocks(filepath.Join(root, "README.md"))
				require.NoError(t, err)
				for _, b := range tour {
					if b.notRun == "" {
						fmt.Fprintf(&script, "\n# README.md:%d\n%s\n", b.line, expectations(b.text))
					}
				}
			}
			ran, pgDSN, pgEmpty := 0, "", ""
			for _, b := range blocks {
				if b.notRun != "" {
					t.Logf("%s:%d not run: %s", page, b.line, b.notRun)
					continue
				}
				if b.pg && os.Getenv(store.PostgresDSNEnv) == "" {
					t.Logf("%s:%d not run: %s is unset", page, b.line, store.PostgresDSNEnv)
					continue
				}
				if b.pg && pgDSN == "" {
					pgDSN, pgEmpty = newDocsDatabase(t), newDocsDatabase(t)
				}
				fmt.Fprintf(&script, "\n# %s:%d\n%s\n", page, b.line, expectations(b.text))
				ran++
			}
			if ran == 0 {
				return
			}
			dir := t.TempDir()
			backups := filepath.Join(dir, "backups")
			require.NoError(t, os.Mkdir(backups, 0o700))
			p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--runtime-addr", "127.0.0.1:0",
				"--db", "sqlite:svcflow.db", "--allow-private-targets", "--dev-show-codes")
			text := strings.NewReplacer(
				// the ports of the processes a page starts itself: free ones, so that pages
				// and tests running at once do not meet
				":18080", ":"+freePort(t), ":18081", ":"+freePort(t), ":19090", ":"+freePort(t), ":19091", ":"+freePort(t),
				"localhost:8080", strings.TrimPrefix(p.base, "http://"),
				"localhost:8081", strings.TrimPrefix(p.gateway, "http://"),
				" svcflow.db", " "+filepath.Join(dir, "svcflow.db"),
				"sqlite:svcflow.db", "sqlite:"+filepath.Join(dir, "svcflow.db"),
				"/backups", backups,
				"http://localhost:4318", collector.URL,
			).Replace(script.String())
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", text)
			cmd.WaitDelay = time.Second
			// A page may start processes in the background (a restored copy served): they go
			// with the page's bash, whatever way it ends.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.Dir = root
			cmd.Env = append(withoutOTel(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"OPENAI_BASE_URL="+model.srv.URL+"/v1", "OPENAI_API_KEY=sk-docs-test", "PPROF_TMPDIR="+dir, "DB="+pgDSN, "EMPTY_DB="+pgEmpty)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			require.NoError(t, err, "%s's examples failed:\n%s", page, out.String())
			if testing.Verbose() {
				t.Logf("%s's examples answered:\n%s", page, out.String())
			}
			if page == "docs/agents.md" { // the agent's answer, from the model, after a person's
				require.Contains(t, out.String(), `"status":"paused"`)
				require.Contains(t, out.String(), `"final_answer":"`+docsAgentAnswer+`"`)
			}
			if page == "docs/process-studio.md" { // the model's draft, published as a process
				require.Contains(t, out.String(), `"name":"Log tickets"`)
				require.Contains(t, out.String(), `"published":true`)
			}
			if page == "docs/operations.md" { // the traced run's spans reached the receiver
				var runs []string
				for _, s := range collector.Spans() {
					if s.GetName() == "run" {
						runs = append(runs, s.Attrs["svcflow.run.status"])
					}
				}
				require.Equal(t, []string{"completed"}, runs)
			}
		})
	}
}

// TestEveryDocsPageRuns keeps docPages whole: a new page under docs/ runs its examples too.
func TestEveryDocsPageRuns(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range pages {
		name := "docs/" + filepath.Base(p)
		if name == "docs/decisions.md" || name == "docs/performance.md" {
			continue
		}
		require.Contains(t, docPages, name, "add %s to docPages", name)
	}
}

func TestExpectationsMarkTheCommandsComment(t *testing.T) {
	t.Parallel()
	in := "curl -s localhost:8080/a   # -> 422 {\"code\": \"x\"}\n" +
		"curl -s localhost:8080/d\n# -> 409 {\"code\": \"conflict\"}\n" +
		"RUN=$(curl -s -X POST localhost:8080/b \\\n  -d '{}' | id)   # → 404\n" +
		"curl -s localhost:8080/c   # -> {\"ok\": true}\n"
	require.Equal(t,
		"curl --svc-expect 422 -s localhost:8080/a   # -> 422 {\"code\": \"x\"}\n"+
			"curl --svc-expect 409 -s localhost:8080/d\n# -> 409 {\"code\": \"conflict\"}\n"+
			"RUN=$(curl --svc-expect 404 -s -X POST localhost:8080/b \\\n  -d '{}' | id)   # → 404\n"+
			"curl -s localhost:8080/c   # -> {\"ok\": true}\n",
		expectations(in))
}

// newDocsDatabase creates a database on SVC_TEST_POSTGRES_DSN's server, dropped when the
// test ends, and returns its connection string.
func newDocsDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv(store.PostgresDSNEnv)
	u, err := url.Parse(base)
	require.NoError(t, err)
	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	name := "docs_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	_, err = admin.Exec("CREATE DATABASE " + name)
	require.NoError(t, err)
	t.Cleanup(func() {
		defer admin.Close()
		_, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		require.NoError(t, err)
	})
	u.Path = "/" + name
	return u.String()
}

// freePort is a TCP port of the loopback that nothing listens on (as of now).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

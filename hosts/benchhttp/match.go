package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/procmem"
)

// The match mode: the 2-way matcher end to end over HTTP on the files benchmatch -write
// made (make bench-match-http), as a client would use it: execute with the records inline
// (or as doc: references to the CSV files, uploaded first), wait for the run, and read its
// whole result (every pair, every unmatched record) through GET /runs/{id}/context/{key}:
// streamed as NDJSON (-read ndjson, the default), or page by page (-read pages, -page
// elements a page: the route's largest, 10,000, by default).

const matchFlow = `{"actions": [{"type": "matcher", "properties": {
  "left": %s, "right": %s, "matchOn": ["counterparty"], "tolerance": 0.05, "dateWindowDays": 3,
  "outputMatched": "matched", "outputUnmatchedLeft": "unmatched_left", "outputUnmatchedRight": "unmatched_right"}}]}`

// matchMode runs the inline and the doc: variants (those named in variants) repeat times
// each against one server, which keeps document content as files when docFiles is set. It prints, for each run, the server process's peak resident set
// over that run alone (VmHWM, reset before it starts) beside the size of the input.
func matchMode(ctx context.Context, bin, dir, data string, workers, repeat int, readHow string, pageSize int, variants []string, docFiles bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(data, name)) }
	var csvBytes [2]int64
	for i, name := range []string{"left.csv", "right.csv"} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil {
			return err
		}
		csvBytes[i] = fi.Size()
	}
	// Files past the server's default document limit (25 MiB) are what --max-document-mib
	// is for: the server is started with the largest file's size, rounded up.
	var extra []string
	if largest := max(csvBytes[0], csvBytes[1]); largest > 25<<20 {
		extra = append(extra, "--max-document-mib", fmt.Sprint(largest>>20+1))
	}
	if docFiles {
		extra = append(extra, "--documents-dir", filepath.Join(dir, "documents"))
	}
	srv, err := startServer(ctx, bin, dir, workers, extra...)
	if err != nil {
		return err
	}
	defer srv.stop()
	c := newClient(srv.base, 4)
	defer c.close()
	const org = "bench-match"
	peak := peakMeter{pid: srv.cmd.Process.Pid}

	if slices.Contains(variants, "inline") {
		left, err := read("left.json")
		if err != nil {
			return err
		}
		right, err := read("right.json")
		if err != nil {
			return err
		}
		inline, err := c.createWorkflow(ctx, org, "match-inline", fmt.Sprintf(matchFlow, `"@input.left"`, `"@input.right"`))
		if err != nil {
			return err
		}
		body := bytes.Join([][]byte{[]byte(`{"input": {"left": `), left, []byte(`, "right": `), right, []byte(`}}`)}, nil)
		fmt.Printf("match: %s and %s, %.1f MB of JSON inline\n", filepath.Join(data, "left.json"), filepath.Join(data, "right.json"), float64(len(body))/1e6)
		for i := range repeat {
			peak.reset()
			if err := c.timeMatch(ctx, srv.cmd.Process.Pid, org, inline, body, fmt.Sprintf("inline JSON #%d", i+1), readHow, pageSize); err != nil {
				return err
			}
			peak.print(int64(len(body)), "of JSON")
		}
	}
	if !slices.Contains(variants, "doc") {
		return nil
	}
	uploadStart := time.Now()
	var refs [2]string
	for i, name := range []string{"left.csv", "right.csv"} {
		content, err := read(name)
		if err != nil {
			return err
		}
		if refs[i], err = c.upload(ctx, org, name, content); err != nil {
			return err
		}
	}
	fmt.Printf("  uploaded left.csv and right.csv (%.1f MB) in %.3f s\n", float64(csvBytes[0]+csvBytes[1])/1e6, time.Since(uploadStart).Seconds())
	docs, err := c.createWorkflow(ctx, org, "match-doc", fmt.Sprintf(matchFlow, `"doc:`+refs[0]+`"`, `"doc:`+refs[1]+`"`))
	if err != nil {
		return err
	}
	for i := range repeat {
		peak.reset()
		if err := c.timeMatch(ctx, srv.cmd.Process.Pid, org, docs, []byte(`{"input": {}}`), fmt.Sprintf("doc: CSV #%d", i+1), readHow, pageSize); err != nil {
			return err
		}
		peak.print(csvBytes[0]+csvBytes[1], "of CSV documents")
	}
	return nil
}

// peakMeter follows a process's memory over one measured run: its peak resident set
// (VmHWM in /proc/PID/status, reset to the current resident set before the run with
// clear_refs "5", Linux 4.0 and later; the bench's user owns the server process), and the
// peaks of its two parts, sampled every 10 ms: anonymous memory (the Go heap, stacks) and
// file pages mapped into it (SQLite reads the database through mmap: those pages are the
// kernel's page cache, shared and reclaimable, and count in VmHWM too).
type peakMeter struct {
	pid     int
	cleared bool
	stop    chan struct{}
	done    chan struct{}
	anon    uint64 // peak RssAnon, bytes
	file    uint64 // peak RssFile, bytes
}

func (p *peakMeter) reset() {
	p.cleared = procmem.ResetPeak(p.pid)
	p.anon, p.file = 0, 0
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			b, _ := procmem.Bytes(p.pid, "RssAnon", "RssFile")
			p.anon, p.file = max(p.anon, b[0]), max(p.file, b[1])
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// print ends the run's sampling and prints its peaks against input bytes of input (what
// they are).
func (p *peakMeter) print(input int64, what string) {
	close(p.stop)
	<-p.done
	b, _ := procmem.Bytes(p.pid, "VmHWM")
	hwm := b[0]
	since := "over this run (peak reset before it)"
	if !p.cleared {
		since = "of the whole process (the peak could not be reset)"
	}
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	ratio := func(b uint64) float64 { return float64(b) / float64(input) }
	fmt.Printf("    server peak RSS %.0f MiB %s: %.2fx the %.1f MB %s; sampled peaks: anonymous %.0f MiB (%.2fx), files mapped (the binary, the database, documents) %.0f MiB\n",
		mib(hwm), since, ratio(hwm), float64(input)/1e6, what, mib(p.anon), ratio(p.anon), mib(p.file))
}

func (c *client) createWorkflow(ctx context.Context, org, name, def string) (string, error) {
	var w struct {
		ID string `json:"id"`
	}
	body := []byte(`{"name": "` + name + `", "definition": ` + def + `}`)
	_, err := c.do(ctx, "create workflow", http.MethodPost, "/workflows", org, body, &w)
	return w.ID, err
}

// upload sends a document and returns its id.
func (c *client) upload(ctx context.Context, org, name string, content []byte) (string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return "", err
	}
	if _, err := fw.Write(content); err != nil {
		return "", err
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/documents", &buf)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Org-Id", org)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var d struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("upload %s: %s", name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return "", err
	}
	return d.ID, nil
}

// resultKeys are the context keys that hold a match's whole result: every pair, and every
// record of either side left without one.
var resultKeys = []string{"matched", "unmatched_left", "unmatched_right"}

// timeMatch executes workflow wfID with body, follows the run to its end and reads its
// whole result (resultKeys): streamed as NDJSON (read "ndjson"), or page by page (read
// "pages", pageSize elements a page). It prints the time of each part, and the time from
// the execute request to the last byte of the result in the client's hands, each element
// checked as JSON.
func (c *client) timeMatch(ctx context.Context, server int, org, wfID string, body []byte, label, read string, pageSize int) error {
	start := time.Now()
	startServer, _ := processCPU(server)
	startClient := selfCPU()
	var d runDoc
	if _, err := c.do(ctx, "execute", http.MethodPost, "/workflows/"+url.PathEscape(wfID)+"/execute?context=false&wait="+waitParam, org, body, &d); err != nil {
		return err
	}
	for d.Status == svctype.RunRunning { // past execute's wait: status without the context
		path := "/runs/" + url.PathEscape(d.ID) + "/status?context=false&wait=" + waitParam
		if _, err := c.do(ctx, "status", http.MethodGet, path, org, nil, &d); err != nil {
			return err
		}
	}
	if d.Status != svctype.RunCompleted {
		return fmt.Errorf("%s: run %s ended %s: %s", label, d.ID, d.Status, d.Reason)
	}
	ran := time.Since(start)
	serverCPU, _ := processCPU(server)
	clientCPU := selfCPU()
	counts := make([]int, len(resultKeys))
	requests := 0
	for i, key := range resultKeys {
		var res heldResult
		var n int
		var err error
		if read == "pages" {
			n, err = c.readPages(ctx, org, d.ID, key, pageSize, &res)
		} else {
			n, err = c.readNDJSON(ctx, org, d.ID, key, &res)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		counts[i], requests = res.len(), requests+n
	}
	total := time.Since(start)
	endServer, _ := processCPU(server)
	endClient := selfCPU()
	serverCPU, clientCPU = endServer-serverCPU, endClient-clientCPU
	how := "as NDJSON"
	if read == "pages" {
		how = fmt.Sprintf("in pages of %d", pageSize)
	}
	fmt.Printf("  %-16s %6d pairs, %d + %d unmatched: run %.3f s, then the result %s (%d requests) %.3f s; request to last byte %.3f s\n",
		label, counts[0], counts[1], counts[2], ran.Seconds(), how, requests, (total - ran).Seconds(), total.Seconds())
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	fmt.Printf("    CPU time (load does not change it), request to last byte: server %.0f ms, client %.0f ms; of it the result's: server %.0f ms, client %.0f ms\n",
		ms(endServer-startServer), ms(endClient-startClient), ms(serverCPU), ms(clientCPU))
	return nil
}

// heldResult is what the client holds of one key: its elements' bytes one after another in
// one buffer, and where each ends.
type heldResult struct {
	bytes []byte
	ends  []int
}

func (r *heldResult) add(el []byte) {
	r.bytes = append(r.bytes, el...)
	r.ends = append(r.ends, len(r.bytes))
}

func (r *heldResult) len() int { return len(r.ends) }

// readNDJSON reads key whole as NDJSON, checking each line as JSON while the rest arrives.
func (c *client) readNDJSON(ctx context.Context, org, runID, key string, into *heldResult) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/runs/"+url.PathEscape(runID)+"/context/"+key, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Org-Id", org)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read %s: %s", key, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 256<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !gjson.ValidBytes(line) {
			return 0, fmt.Errorf("read %s: line %d is not JSON", key, into.len()+1)
		}
		into.add(line)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	return 1, nil
}

// readPages reads key page by page through the paged JSON answer.
func (c *client) readPages(ctx context.Context, org, runID, key string, pageSize int, into *heldResult) (int, error) {
	pages := 0
	for offset := 0; ; offset += pageSize {
		// Each page is checked whole and split into its elements, as []json.RawMessage
		// would give them, with gjson: encoding/json's Decoder does the same work about
		// five times slower, and that is the client's time, not the service's.
		var body []byte
		path := fmt.Sprintf("/runs/%s/context/%s?offset=%d&limit=%d", url.PathEscape(runID), key, offset, pageSize)
		if _, err := c.do(ctx, "read "+key, http.MethodGet, path, org, nil, &body); err != nil {
			return pages, err
		}
		if !gjson.ValidBytes(body) {
			return pages, fmt.Errorf("%s: page at %d is not JSON", key, offset)
		}
		page := gjson.ParseBytes(body)
		page.Get("value").ForEach(func(_, el gjson.Result) bool {
			into.add([]byte(el.Raw))
			return true
		})
		pages++
		if offset+pageSize >= int(page.Get("total").Int()) {
			return pages, nil
		}
	}
}

package testlog

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// secretShapes are the shapes of secrets the service issues or the suite hands it: model
// API keys (sk-...), webhook signing secrets (whsec...), the gateway's runtime keys,
// management and session tokens (not the publishable key, which is public), Slack-style
// OAuth tokens, bearer credentials, JWTs and PEM private keys.
var secretShapes = regexp.MustCompile(`(?:^|[^A-Za-z0-9])(sk-[A-Za-z0-9_-]{4,}|whsec[-_][A-Za-z0-9_-]{4,}|svc_(?:live|mgmt|sess)_[A-Za-z0-9]{4,}|xox[abprs]-[A-Za-z0-9-]{2,})|(?i:bearer\s+[A-Za-z0-9._~+/-]{8,})|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// Finding is a log line with a secret in it.
type Finding struct {
	File string
	Line int
	// Match is the secret, cut to its first characters.
	Match string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s...", f.File, f.Line, f.Match) }

// Report is what Scan read and found.
type Report struct {
	Files, Lines int
	Findings     []Finding
}

// Scan reads every log file in dir (the files Main, Quiet, Tee and Line wrote) and
// returns each line holding a value of a secret's shape, or a value a test named with
// Secret.
func Scan(dir string) (Report, error) {
	var r Report
	var named []string
	secretFiles, _ := filepath.Glob(filepath.Join(dir, "secrets.*"))
	for _, p := range secretFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			return r, err
		}
		for _, s := range strings.Split(string(b), "\n") {
			if s != "" {
				named = append(named, s)
			}
		}
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return r, err
	}
	sort.Strings(logs)
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			return r, err
		}
		r.Files++
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		n := 0
		for sc.Scan() {
			n++
			r.Lines++
			line := sc.Text()
			match := ""
			if m := secretShapes.FindString(line); m != "" {
				match = strings.TrimLeft(m, " \t\"'=:,([{")
			}
			for _, s := range named {
				if match == "" && strings.Contains(line, s) {
					match = s
				}
			}
			if match != "" {
				r.Findings = append(r.Findings, Finding{File: filepath.Base(p), Line: n, Match: match[:min(len(match), 10)]})
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return r, fmt.Errorf("%s: %w", p, err)
		}
	}
	return r, nil
}

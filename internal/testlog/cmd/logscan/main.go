// Command logscan fails when a log line the test suite gathered (internal/testlog) holds a
// secret: .ci/test runs it after the suite.
//
//	go run ./internal/testlog/cmd/logscan DIR
package main

import (
	"fmt"
	"os"

	"github.com/svcflow/svcflow/internal/testlog"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: logscan DIR")
		os.Exit(2)
	}
	r, err := testlog.Scan(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "logscan:", err)
		os.Exit(1)
	}
	fmt.Printf("logscan: %d lines in %d log files of the test suite, %d with a secret\n", r.Lines, r.Files, len(r.Findings))
	for _, f := range r.Findings {
		fmt.Println("  ", f)
	}
	if r.Files == 0 || r.Lines == 0 {
		fmt.Fprintln(os.Stderr, "logscan: no log gathered: was the suite run with", testlog.EnvDir, "set?")
		os.Exit(1)
	}
	if len(r.Findings) > 0 {
		os.Exit(1)
	}
}

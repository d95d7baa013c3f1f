// Package svcbin builds the svcflow binary for the programs that drive it from outside
// (hosts/benchhttp, hosts/chaos): it is tooling, not part of the service.
package svcbin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds ./hosts/svcflow of the module the caller runs in into dir and returns the
// binary's path; the compiler's output goes to stderr.
func Build(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the svcflow module: run from the repository, or pass -binary")
	}
	bin := filepath.Join(dir, "svcflow")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./hosts/svcflow")
	cmd.Dir = filepath.Dir(gomod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./hosts/svcflow: %w", err)
	}
	return bin, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago, for a process to
// listen on.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Package procmem reads a Linux process's memory figures from /proc: its peak resident set
// (VmHWM) and what it is made of now (RssAnon, RssFile), and resets the peak. The
// benchmarks that state peak memory (benchmatch -raw, benchhttp -mode match) use it.
package procmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

func path(pid int, file string) string {
	if pid == 0 {
		return "/proc/self/" + file
	}
	return fmt.Sprintf("/proc/%d/%s", pid, file)
}

// Bytes reads the fields named (VmHWM, RssAnon, RssFile ...) of process pid's status (0:
// this process), in bytes, in the order named; ok is false when any could not be read.
func Bytes(pid int, names ...string) (out []uint64, ok bool) {
	out = make([]uint64, len(names))
	b, err := os.ReadFile(path(pid, "status"))
	if err != nil {
		return out, false
	}
	found := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		for i, name := range names {
			v, cut := strings.CutPrefix(line, name+":")
			if !cut {
				continue
			}
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				out[i] = kb << 10
				found++
			}
		}
	}
	return out, found == len(names)
}

// ResetPeak sets process pid's peak resident set to its current one (clear_refs "5",
// Linux 4.0 and later; the caller must own the process), so that a peak read later is the
// peak since now. It reports whether Linux allowed it.
func ResetPeak(pid int) bool {
	return os.WriteFile(path(pid, "clear_refs"), []byte("5"), 0) == nil
}

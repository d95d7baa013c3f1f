package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on every
// architecture Go runs Linux on (sysconf(_SC_CLK_TCK), which Go does not expose).
const clockTick = 10 * time.Millisecond

// processCPU is the user and system CPU time process pid has used, all its threads, from
// /proc/PID/stat; ok is false where Linux does not tell (no /proc, the process gone).
func processCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, fields 14 and 15 of a /proc/PID/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields are counted from
// its closing one.
func parseStatCPU(stat string) (time.Duration, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// cpuMeter measures the CPU time that the server processes (pids) and this program used
// between start and stop.
type cpuMeter struct {
	pids        []int
	server, own time.Duration
	ok          bool
}

// startCPU reads the counters at the start of a measurement.
func startCPU(pids []int) *cpuMeter {
	m := &cpuMeter{pids: pids}
	m.server, m.ok = m.serverCPU()
	m.own = selfCPU()
	return m
}

// stop returns the CPU time used since start by the servers (ok false when /proc could
// not tell) and by this program.
func (m *cpuMeter) stop() (server, own time.Duration, ok bool) {
	s, sok := m.serverCPU()
	return s - m.server, selfCPU() - m.own, m.ok && sok && len(m.pids) > 0
}

func (m *cpuMeter) serverCPU() (time.Duration, bool) {
	var sum time.Duration
	for _, pid := range m.pids {
		d, ok := processCPU(pid)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// selfCPU is the user and system CPU time this program has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !linux

package main

import "syscall"

// procAttr: outside Linux there is no parent-death signal; children are stopped by
// stopAll, on every exit path but this program's own SIGKILL.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

package main

import "syscall"

// procAttr puts a child in its own process group (so a Ctrl-C in the terminal reaches this
// program only, which then stops the children itself) and has the kernel kill it when this
// program dies, even by SIGKILL, so no svcflow process outlives a chaos run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package etcdtest

import "syscall"

// memberProcAttr: only Linux kills a child with its parent (Pdeathsig);
// elsewhere a test binary that dies without its cleanups leaves its
// members running.
func memberProcAttr() *syscall.SysProcAttr { return nil }

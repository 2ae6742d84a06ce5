//go:build !linux

package childproc

import "os/exec"

// dieWithParent does nothing here: the child exits when its stdin, held by
// the parent, reaches EOF.
func dieWithParent(cmd *exec.Cmd) {}

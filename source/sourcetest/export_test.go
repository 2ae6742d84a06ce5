package sourcetest

import "testing"

// RunCheck runs the check named name (one of [Checks]) against h, reporting
// to tb, and reports whether the check exists. The kit's own tests call it
// with a recording testing.TB to learn which checks a broken source fails.
func RunCheck[T any](tb testing.TB, h Harness[T], name string) bool {
	for _, c := range checks[T]() {
		if c.name == name {
			runCheck(tb, h, c.fn)
			return true
		}
	}
	return false
}

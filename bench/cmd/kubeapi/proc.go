package main

import (
	"context"
	"time"

	"github.com/ginformer/ginformer/bench/internal/childproc"
)

// runChild runs one measurement of lib in a child process: it waits for
// the sync ("READY"), has write perform the watch phase's writes, tells the
// child ("DONE"), and returns the child's result ("RESULT {json}") with the
// writes. With relist (-relist, nil: none) it waits for the child to be
// ready for it ("ARMED") and has relist expire its watch first.
func runChild(ctx context.Context, exe string, args []string, timeout time.Duration, write func() ([]update, error), relist func() error) (*result, []update, error) {
	p, err := childproc.Start(exe, args)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			p.Kill()
		}
	}()
	if err := p.Expect(ctx, "READY", timeout, nil); err != nil {
		return nil, nil, err
	}
	writes, err := write()
	if err != nil {
		return nil, nil, err
	}
	// The child may have finished already (and closed its end): an error
	// here shows as a missing RESULT below.
	_ = p.Send("DONE", nil)
	if relist != nil {
		if err := p.Expect(ctx, "ARMED", timeout, nil); err != nil {
			return nil, nil, err
		}
		if err := relist(); err != nil {
			return nil, nil, err
		}
	}
	var res result
	if err := p.Expect(ctx, "RESULT", timeout, &res); err != nil {
		return nil, nil, err
	}
	if err := p.Finish(); err != nil {
		return nil, nil, err
	}
	ok = true
	return &res, writes, nil
}

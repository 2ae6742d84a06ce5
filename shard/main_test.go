package shard_test

import (
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func discard() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

#!/bin/sh
# gofmt, go vet and staticcheck (the version of scripts/staticcheck-binary.sh,
# default checks) on every package of every module in go.work; exits
# non-zero on any finding. `make lint` runs it, and `make test` (what CI
# runs) runs `make lint` first.
#
# A finding that is intended (a test that panics on a nil map on purpose,
# a benchmark of an empty critical section) is marked on its line with
#   //lint:ignore CHECK reason
# never excluded here.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
staticcheck=$(scripts/staticcheck-binary.sh)
# One pattern per module directory: ./... stops at nested modules.
pkgs=$(go list -m -f '{{.Dir}}/...')
unformatted=$(git ls-files '*.go' | xargs gofmt -l)
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted (run gofmt -w):" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo "go vet: $(echo "$pkgs" | wc -l) modules" >&2
# clientgo_next-tagged files (source/k8s/compat) need the next client-go:
# scripts/clientgo-next.sh vets them (go test's vet checks) in make test.
go vet $pkgs
"$staticcheck" -version >&2
"$staticcheck" $pkgs
echo "lint: no findings" >&2

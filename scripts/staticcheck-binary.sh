#!/bin/sh
# Prints the path of a staticcheck binary of the version pinned below,
# installing it first from the Go module proxy (about a minute cold) into a
# cache directory outside the repository if it is not there yet.
#
#   STATICCHECK=$(scripts/staticcheck-binary.sh)
#
# The version must support the Go of go.work (v0.8 is the first for Go 1.26).
set -eu
version=v0.8.2
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ginformer/staticcheck-$version"
bin="$dir/staticcheck"
# One install at a time: concurrent callers wait on the lock, then find the
# binary the first one installed.
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [ ! -x "$bin" ]; then
	echo "installing staticcheck $version into $dir (once)..." >&2
	# GOWORK=off: go install pkg@version builds outside any module; the
	# workspace would only get in its way.
	GOWORK=off GOBIN="$dir/tmp" go install "honnef.co/go/tools/cmd/staticcheck@$version" >&2
	mv "$dir/tmp/staticcheck" "$bin"
	rmdir "$dir/tmp"
fi
flock -u 9
exec 9>&-
echo "$bin"

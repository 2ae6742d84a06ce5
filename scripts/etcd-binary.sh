#!/bin/sh
# Prints the path of an etcd server binary of the version pinned in
# tools/etcd/go.mod, building it first (about 45 s cold) into a cache
# directory outside the repository if it is not there yet.
#
#   ETCD_BIN=$(scripts/etcd-binary.sh)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/tools/etcd"
version=$(cd "$tools" && GOWORK=off go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ginformer/etcd-$version"
bin="$dir/etcd"
# One build at a time: concurrent callers (two test runs, a benchmark and a
# test) wait on the lock, then find the binary the first one built.
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [ ! -x "$bin" ]; then
	echo "building etcd $version into $dir (once)..." >&2
	(cd "$tools" && GOWORK=off go build -o "$bin.tmp" go.etcd.io/etcd/server/v3) >&2
	mv "$bin.tmp" "$bin"
fi
flock -u 9
exec 9>&-
echo "$bin"

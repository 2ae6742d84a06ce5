#!/bin/sh
# Prints a directory usable as KUBEBUILDER_ASSETS for
# sigs.k8s.io/controller-runtime/pkg/envtest: it holds `kube-apiserver`, built
# from the Go module proxy at the version pinned in tools/kube-apiserver/go.mod
# (once: 12 to 17 CPU-minutes, ~6-9 min on 2 idle cores, far longer on loaded
# ones; see docs/k8s.md), and `etcd`, a symlink to the binary
# of scripts/etcd-binary.sh. Everything lives in a cache directory outside the
# repository and is only built when missing.
#
#   KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/tools/kube-apiserver"
version=$(cd "$tools" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ginformer/kube-$version"
bin="$dir/kube-apiserver"
# One build at a time: concurrent callers wait on the lock, then find the
# binary the first one built.
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [ ! -x "$bin" ]; then
	echo "building kube-apiserver $version into $dir (once, 12-17 CPU-minutes; see docs/k8s.md)..." >&2
	# v1.37.1 -> major 1, minor 37.
	major=$(echo "$version" | sed 's/^v\([0-9]*\)\..*/\1/')
	minor=$(echo "$version" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	(cd "$tools" && GOWORK=off go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver) >&2
	mv "$bin.tmp" "$bin"
fi
flock -u 9
exec 9>&-
etcd=$("$root/scripts/etcd-binary.sh")
ln -sf "$etcd" "$dir/etcd"
echo "$dir"

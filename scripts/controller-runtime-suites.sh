#!/bin/sh
# Runs controller-runtime's own test suites with compat behind every informer
# its cache creates (issue 29, item 6): the source of
# sigs.k8s.io/controller-runtime at CR_VERSION is fetched from the Go module
# proxy (go mod download), copied to a temporary directory outside the
# repository, patched so that pkg/cache's default NewInformer is
# compat.NewSharedIndexInformer instead of client-go's, pointed at this
# checkout's source/k8s (replace directives), and its suites run against
# envtest (KUBEBUILDER_ASSETS, built by scripts/kube-apiserver-binary.sh when
# unset). The temporary directory is removed on exit.
#
#   scripts/controller-runtime-suites.sh                 # the default suites
#   scripts/controller-runtime-suites.sh ./pkg/cache/... # others
#
# CR_VERSION: the version (the one source/k8s/go.mod requires). CR_FLAGS:
# extra `go test` flags (-race, -v, -run ...). Exit status: go test's.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
version=${CR_VERSION:-$(cd "$root/source/k8s" && GOWORK=off go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)}
if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
	KUBEBUILDER_ASSETS=$("$root/scripts/kube-apiserver-binary.sh")
	export KUBEBUILDER_ASSETS
fi
if [ $# -eq 0 ]; then
	set -- ./pkg/cache/... ./pkg/builder/... ./pkg/internal/controller/... ./pkg/controller/... \
		./pkg/source/... ./pkg/manager/... ./pkg/cluster/... ./pkg/handler/...
fi

# The module's directory in the module cache ("Dir" of go mod download -json).
src=$(cd "$root/source/k8s" && GOWORK=off go mod download -json "sigs.k8s.io/controller-runtime@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [ -z "$src" ] || [ ! -d "$src" ]; then
	echo "controller-runtime-suites: go mod download gave no directory for controller-runtime $version" >&2
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ginformer-cr-XXXXXX")
# Some of controller-runtime's specs leave an envtest control plane running
# (two etcd and kube-apiserver pairs in one run). Their temporary files are
# made under $work/tmp, so on exit the processes whose command line names
# $work, and only those, are stopped before it is removed.
cleanup() {
	for pid in $(pgrep -f -- "$work/" || true); do
		kill -9 "$pid" 2>/dev/null || true
	done
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
cp -R "$src" "$work/cr"
chmod -R u+w "$work/cr"
cd "$work/cr"

# The patch: pkg/cache/internal/informers.go defaults NewInformer to
# client-go's cache.NewSharedIndexInformer; compat's has the same signature.
f=pkg/cache/internal/informers.go
grep -q 'newInformer := cache.NewSharedIndexInformer$' "$f" || {
	echo "controller-runtime-suites: $f no longer reads 'newInformer := cache.NewSharedIndexInformer': update the patch" >&2
	exit 1
}
sed -i 's|newInformer := cache.NewSharedIndexInformer$|newInformer := compat.NewSharedIndexInformer|' "$f"
sed -i '0,/^import (/s||import (\n\tcompat "github.com/ginformer/ginformer/source/k8s/compat"|' "$f"

export GOWORK=off GOFLAGS=-mod=mod
go mod edit \
	-require=github.com/ginformer/ginformer/source/k8s@v0.0.0-00010101000000-000000000000 \
	-replace=github.com/ginformer/ginformer/source/k8s="$root/source/k8s" \
	-replace=github.com/ginformer/ginformer="$root"
go mod tidy >/dev/null
echo "controller-runtime $version, patched to compat.NewSharedIndexInformer, in $work/cr" >&2
# shellcheck disable=SC2086 # CR_FLAGS is a list of flags
mkdir "$work/tmp"
TMPDIR="$work/tmp" go test -count=1 ${CR_FLAGS:-} "$@"

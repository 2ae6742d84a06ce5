#!/bin/sh
# Builds source/k8s against the newest client-go the Go module proxy serves
# (issue 30 §1) and runs its tests; or builds bench/cmd/kubeapi's
# children against it.
#
#   scripts/clientgo-next.sh                  # source/k8s's tests (make test-clientgo-next)
#   scripts/clientgo-next.sh test -run X -v   # go test flags for the main run
#   scripts/clientgo-next.sh kubeapi          # prints the path of bench/cmd/kubeapi built against it
#
# In a temporary directory outside the repository (removed on exit), a copy
# of source/k8s (or bench) gets a go.mod that requires k8s.io/client-go,
# k8s.io/api and k8s.io/apimachinery at NEXT_VERSION, with this checkout's
# modules replaced in (so its code is what is tested), built with the Go
# toolchain client-go needs (NEXT_TOOLCHAIN, which the go command fetches
# from the module proxy once into the module cache). What the module graph
# needed to resolve at v0.38.0-beta.0 (docs/k8s.md, "Building against the
# next client-go"):
#   - k8s.io/ktesting v0.38.0-beta.0 is not served: required by apimachinery
#     and client-go, imported only by their tests; an empty stand-in module,
#     generated here;
#   - sigs.k8s.io/structured-merge-diff/v7 v7.0.1 is not served: v7.0.0;
#   - k8s.io/apiextensions-apiserver v0.38.0-beta.0 (controller-runtime's
#     envtest needs it) imports k8s.io/apiextensions-api, not served; v0.37
#     does not build against apimachinery v0.38 (structured-merge-diff v6 vs
#     v7): v0.38.0-alpha.2, the last before the split.
# The first run tests the pins verbosely (the gentype reflection, Decoding()
# for a clientset, the apiserver's behaviour), then every package.
#
# Everything is built with -tags clientgo_next: files guarded by
# //go:build clientgo_next use what only the next client-go has (compat's
# SetShardSelector, which v0.38 adds to cache.SharedIndexInformer, in
# source/k8s/compat/shard_selector_next.go), files guarded by
# //go:build !clientgo_next stand in for them in the repository's own build.
#
# NEXT_SKIP, an extended regular expression of package paths, leaves
# packages that do not build against NEXT_VERSION out of the run (none by
# default): the script shows their build error and goes on; NEXT_STRICT=1
# makes it fail instead.
#
# KUBEBUILDER_ASSETS: the apiserver of the envtest tests (built by
# scripts/kube-apiserver-binary.sh when unset; v1.37.1 is fine as the
# server). NEXT_VERSION, NEXT_TOOLCHAIN, NEXT_APIEXTENSIONS override the
# versions. Expensive things are cached outside the repository: the
# toolchain and modules in the module cache, compiled packages in the build
# cache, the kubeapi binary in ${XDG_CACHE_HOME:-~/.cache}/ginformer/clientgo-VERSION/.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
version=${NEXT_VERSION:-v0.38.0-beta.0}
toolchain=${NEXT_TOOLCHAIN:-go1.27.3}
apiext=${NEXT_APIEXTENSIONS:-v0.38.0-alpha.2}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ginformer/clientgo-$version
mode=test
tags=clientgo_next
if [ $# -gt 0 ]; then
	case $1 in
	test | kubeapi) mode=$1; shift ;;
	esac
fi

if [ "$mode" = test ] && [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
	KUBEBUILDER_ASSETS=$("$root/scripts/kube-apiserver-binary.sh")
	export KUBEBUILDER_ASSETS
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ginformer-clientgo-next-XXXXXX")
cleanup() {
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=$toolchain

# The stand-in of k8s.io/ktesting: a module with an empty package.
mkdir "$work/ktesting"
printf 'module k8s.io/ktesting\n\ngo 1.26\n' >"$work/ktesting/go.mod"
printf '// Package ktesting is an empty stand-in (scripts/clientgo-next.sh).\npackage ktesting\n' >"$work/ktesting/doc.go"

# overlay DIR: a copy of the module at $root/DIR in $work/DIR, pointed at
# this checkout and at client-go $version.
overlay() {
	mkdir -p "$work/$1" && rmdir "$work/$1"
	cp -R "$root/$1" "$work/$1"
	chmod -R u+w "$work/$1"
	cd "$work/$1"
	# Every module of this checkout the copy names (relative replaces)
	# becomes an absolute one.
	for m in $(go mod edit -json | sed -n 's/^.*"Path": "\(github.com\/ginformer\/ginformer[^"]*\)".*$/\1/p' | sort -u); do
		dir=$root${m#github.com/ginformer/ginformer}
		if [ -f "$dir/go.mod" ]; then
			go mod edit -replace="$m=$dir"
		fi
	done
	go mod edit \
		-require=k8s.io/client-go@"$version" -require=k8s.io/api@"$version" -require=k8s.io/apimachinery@"$version" \
		-require=k8s.io/apiextensions-apiserver@"$apiext" \
		-replace=k8s.io/ktesting="$work/ktesting" \
		-replace=sigs.k8s.io/structured-merge-diff/v7@v7.0.1=sigs.k8s.io/structured-merge-diff/v7@v7.0.0
	go mod tidy
	echo "clientgo-next: $1 against $(go list -m -f '{{.Path}} {{.Version}}' k8s.io/client-go), $(go version | cut -d' ' -f3), in $work/$1" >&2
}

case $mode in
kubeapi)
	overlay bench
	mkdir -p "$cache"
	go build -tags "$tags" -o "$cache/kubeapi" ./cmd/kubeapi
	echo "$cache/kubeapi"
	exit 0
	;;
esac

overlay source/k8s
skip=${NEXT_SKIP:-}
if [ -n "$skip" ]; then
	pkgs=$(go list -tags "$tags" ./... | grep -Ev "$skip")
	if ! out=$(go vet -tags "$tags" $(go list -tags "$tags" ./... | grep -E "$skip") 2>&1); then
		echo "clientgo-next: skipped (NEXT_SKIP), as they do not build against $version (docs/k8s.md, \"Building against the next client-go\"):" >&2
		echo "$out" | grep -v '^#' | sed 's/^/    /' >&2
		if [ "${NEXT_STRICT:-}" = 1 ]; then
			exit 1
		fi
	fi
else
	pkgs=$(go list -tags "$tags" ./...)
fi
pins='^(TestTypedClientLayout|TestClientPathURL|TestDecodingClientset|TestApiserverAssumptions)$'
if ! go test -tags "$tags" -count=1 -v -run "$pins" . >"$work/pins.log" 2>&1; then
	cat "$work/pins.log" >&2
	echo "clientgo-next: the pins failed against client-go $version (see docs/k8s.md, Upgrade checklist)" >&2
	exit 1
fi
grep -E '^(--- |ok)|clientgo_layout_test.go|apiserver_assumptions_test.go' "$work/pins.log" >&2
# shellcheck disable=SC2086 # pkgs and the flags are lists
go test -tags "$tags" -count=1 -timeout 15m "$@" $pkgs

#!/bin/sh
# Prints the path of a Chromium binary for the debug page's browser test
# (informer/debughttp/browser_test.go). `make test` runs it and sets
# CHROMIUM to what it prints.
#
#   CHROMIUM=$(scripts/chromium-binary.sh)
#
# The path printed is the first of $CHROMIUM (if set and executable),
# chromium, chromium-browser on $PATH.
#
# It installs nothing unless asked: only with CI=true (.ci/run sets it) or
# GINFORMER_INSTALL_CHROMIUM=1 (`make test-browser` sets it) does it install
# Debian's chromium package with apt-get when no Chromium is found: about
# 15 s to a minute on a fresh Debian machine (125 MB of packages), nothing
# once it is there; as root, or with passwordless sudo. Fonts:
# fonts-dejavu-core, so that a fresh machine renders text (the test
# measures the layout).
#
# Otherwise, and where it cannot install (no apt-get, or neither root nor
# passwordless sudo), it says so on stderr and prints nothing: the browser
# test then skips with a message. If an install is attempted and fails, it
# exits non-zero.
set -eu
found() {
	if [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ]; then
		echo "$CHROMIUM"
		return 0
	fi
	for name in chromium chromium-browser; do
		if path=$(command -v "$name" 2>/dev/null); then
			echo "$path"
			return 0
		fi
	done
	return 1
}
if found; then
	exit 0
fi
if [ "${CI:-}" != true ] && [ "${GINFORMER_INSTALL_CHROMIUM:-}" != 1 ]; then
	echo "chromium-binary.sh: no Chromium found: the browser test will skip; \`make test-browser\` installs Debian's chromium with apt-get (root or passwordless sudo) and runs it, or set CHROMIUM to a Chromium binary" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "chromium-binary.sh: chromium is not installed and installing it needs root: the browser test will skip" >&2
		exit 0
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium-binary.sh: chromium is not installed and there is no apt-get: set CHROMIUM to a Chromium binary, or the browser test will skip" >&2
	exit 0
fi
# One install at a time: concurrent callers (two test runs) wait on the
# lock, then find the binary the first one installed. apt-get also waits
# for dpkg's own lock (an unrelated install in progress), up to 10 minutes.
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ginformer"
mkdir -p "$dir"
exec 9>"$dir/chromium.lock"
flock 9
if ! found >/dev/null; then
	echo "installing Debian's chromium with apt-get (once)..." >&2
	start=$(date +%s)
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
		--no-install-recommends chromium fonts-dejavu-core >&2
	echo "chromium installed in $(($(date +%s) - start)) s" >&2
fi
flock -u 9
exec 9>&-
found

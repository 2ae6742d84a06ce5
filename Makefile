# The test target is what CI runs (.ci/run calls `make test`).
GO ?= go

# Every module in go.work, tested in one go with the race detector.
MODULES := $(shell $(GO) list -m -f '{{.Dir}}' 2>/dev/null)

.PHONY: test test-browser fuzz-short fuzz-decoders test-repeat test-repeat-engine test-repeat-servers test-controller-runtime test-clientgo-next test-clientgo-next-if-available vet lint bench bench-compare bench-compare-quick fuzz demo examples

# ETCD_BIN: the etcd server binary for the multi-process cluster tests of
# source/etcd, built once into a cache outside the repo (see the script).
# KUBEBUILDER_ASSETS: kube-apiserver (built from the Go module proxy) and
# etcd for the envtest-based tests of source/k8s, cached the same way.
# CHROMIUM: headless Chromium for the debug page's browser test
# (informer/debughttp), if one is installed; the script installs Debian's
# package with apt-get only when asked (CI=true, which .ci/run sets, or
# GINFORMER_INSTALL_CHROMIUM=1, which test-browser sets): elsewhere the
# browser test skips and names test-browser.
# lint (go vet and staticcheck) runs first: any finding fails the target.
# Then source/k8s against the next client-go (test-clientgo-next, without
# -race) when the Go toolchain it needs can be fetched; CLIENTGO_NEXT=0
# skips it.
test: lint
	ETCD_BIN="$$(scripts/etcd-binary.sh)" && export ETCD_BIN && \
	KUBEBUILDER_ASSETS="$$(scripts/kube-apiserver-binary.sh)" && export KUBEBUILDER_ASSETS && \
	CHROMIUM="$$(scripts/chromium-binary.sh)" && export CHROMIUM && \
	$(GO) test -race -count=1 -timeout 15m $(addsuffix /...,$(MODULES))
	$(MAKE) --no-print-directory fuzz-short
	@$(MAKE) --no-print-directory test-clientgo-next-if-available

# The debug page's browser test alone, installing headless Chromium first
# if none is found (Debian's package with apt-get, once: root or
# passwordless sudo). `make test` runs it too once Chromium is installed.
test-browser:
	CHROMIUM="$$(GINFORMER_INSTALL_CHROMIUM=1 scripts/chromium-binary.sh)" && export CHROMIUM && \
	test -n "$$CHROMIUM" && \
	$(GO) test -race -count=1 -run '^TestBrowser$$' -v ./informer/debughttp/

# Flaky-test hunt: every package of every module run repeatedly with the
# race detector, best on a loaded machine. COUNT runs of the engine's
# packages (the core module, metrics/prometheus), SERVER_COUNT runs of the
# modules whose tests start real servers (source/etcd, source/natskv,
# source/k8s) and of bench. Both halves run; either failing fails the target.
#   make test-repeat COUNT=10 SERVER_COUNT=3
# On the shared 2-core machine under other agents' load: the engine half
# 21 min (informer and internal/swmr take most of it), the server half 7 min.
COUNT ?= 10
SERVER_COUNT ?= 3
REPEAT_TIMEOUT ?= 120m
SERVER_MODULES := $(filter %/source/etcd %/source/natskv %/source/k8s %/bench,$(MODULES))
ENGINE_MODULES := $(filter-out $(SERVER_MODULES),$(MODULES))

test-repeat:
	@rc=0; \
	$(MAKE) --no-print-directory test-repeat-engine || rc=1; \
	$(MAKE) --no-print-directory test-repeat-servers || rc=1; \
	exit $$rc

test-repeat-engine:
	$(GO) test -race -count=$(COUNT) -timeout $(REPEAT_TIMEOUT) $(addsuffix /...,$(ENGINE_MODULES))

test-repeat-servers:
	ETCD_BIN="$$(scripts/etcd-binary.sh)" && export ETCD_BIN && \
	KUBEBUILDER_ASSETS="$$(scripts/kube-apiserver-binary.sh)" && export KUBEBUILDER_ASSETS && \
	$(GO) test -race -count=$(SERVER_COUNT) -timeout $(REPEAT_TIMEOUT) $(addsuffix /...,$(SERVER_MODULES))

# controller-runtime's own suites (pkg/cache, builder, internal/controller,
# controller, source, manager, cluster, handler) with compat behind every
# informer its cache creates: its source from the Go module proxy, patched in
# a temporary directory outside the repo (see the script). 3 to 5 minutes on the
# shared 2-core machine without -race (pkg/cache and pkg/manager take most):
# not part of `make test`. CR_FLAGS passes go test flags (CR_FLAGS=-race,
# CR_FLAGS='-run X -v').
test-controller-runtime:
	KUBEBUILDER_ASSETS="$$(scripts/kube-apiserver-binary.sh)" && export KUBEBUILDER_ASSETS && \
	scripts/controller-runtime-suites.sh

# source/k8s built against the newest client-go the module proxy serves
# (v0.38.0-beta.0, with the Go 1.27 it needs: GOTOOLCHAIN=go1.27.3, fetched
# once) in a temporary module outside the repo, and its tests run against
# envtest: the pins of the gentype reflection and of the apiserver's
# behaviour first, then every package but compat (see the script and
# docs/k8s.md, "Building against the next client-go"). NEXT_FLAGS passes go
# test flags (NEXT_FLAGS=-race).
NEXT_TOOLCHAIN ?= go1.27.3
test-clientgo-next:
	KUBEBUILDER_ASSETS="$$(scripts/kube-apiserver-binary.sh)" && export KUBEBUILDER_ASSETS && \
	NEXT_TOOLCHAIN=$(NEXT_TOOLCHAIN) scripts/clientgo-next.sh test $(NEXT_FLAGS)

# What make test runs after its tests: test-clientgo-next, unless
# CLIENTGO_NEXT=0 or NEXT_TOOLCHAIN cannot be fetched (then it says so).
test-clientgo-next-if-available:
	@if [ "$(CLIENTGO_NEXT)" = 0 ]; then \
		echo "make: CLIENTGO_NEXT=0: source/k8s is not tested against the next client-go" >&2; \
	elif GOTOOLCHAIN=$(NEXT_TOOLCHAIN) $(GO) version >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory test-clientgo-next; \
	else \
		echo "make: the $(NEXT_TOOLCHAIN) toolchain cannot be fetched: source/k8s is not tested against the next client-go" >&2; \
	fi

# Every runnable Example of every module.
examples:
	$(GO) test -count=1 -run '^Example' $(addsuffix /...,$(MODULES))

vet:
	$(GO) vet $(addsuffix /...,$(MODULES))

# go vet and staticcheck on every module, failing on any finding (make test
# runs it first). staticcheck is installed once (pinned in the script) into
# ~/.cache/ginformer/, outside the repo; 1 to 2 minutes on 2 cores.
lint:
	scripts/lint.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./informer/ ./internal/... ./workqueue/ ./source/...

# ginformer vs client-go, side by side (bench/ module): prints the table and
# rewrites the comparison region of docs/benchmarks.md and docs/benchmarks.svg.
bench-compare:
	$(GO) run ./bench/cmd/compare

# The same in a few minutes (smaller sizes, one run per side); prints only.
bench-compare-quick:
	$(GO) run ./bench/cmd/compare -quick

# A run of every fuzz target (go test -fuzz takes one target at a time),
# FUZZTIME each (the decoders' 60s). A crash is written to the package's
# testdata/fuzz, where it stays as a regression seed. New inputs are
# minimized for at most 5 s (the default, 60 s each, leaves little time
# to fuzz).
FUZZTIME ?= 30s
DECODER_FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzIndexer$$' -fuzztime $(FUZZTIME) ./informer/
	$(GO) test -run '^$$' -fuzz '^FuzzDeltaFIFO$$' -fuzztime $(FUZZTIME) ./informer/
	$(GO) test -run '^$$' -fuzz '^FuzzRing$$' -fuzztime $(FUZZTIME) ./internal/ringbuf/
	$(GO) test -run '^$$' -fuzz '^FuzzStore$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./source/memory/
	$(MAKE) --no-print-directory fuzz-decoders FUZZTIME=$(DECODER_FUZZTIME)

# The decoders of bytes from the network and from disk, fuzzed FUZZTIME each.
fuzz-decoders:
	$(GO) test -run '^$$' -fuzz '^FuzzValueCodec$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/valuecodec/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/snapshotfmt/
	$(GO) test -run '^$$' -fuzz '^FuzzPBDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./source/k8s/internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzJSONDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./source/k8s/internal/wire/

# What `make test` runs after the race tests: the decoders' fuzz targets,
# 10 s each (their seed corpora already ran as tests).
fuzz-short:
	$(MAKE) --no-print-directory fuzz-decoders FUZZTIME=10s

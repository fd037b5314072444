# The two front-door commands: `make run` and `make test`. Both install what is missing.
CARGO ?= cargo
CARGO_FLAGS := --release --locked
RUN := $(CARGO) run $(CARGO_FLAGS) --quiet --bin stratum-bench --

# The commit every run's host.json names, "-dirty" when tracked files differ from it.
# Only the binary's main.rs reads it, so a new commit relinks the binary and nothing else.
export STRATUM_BENCH_GIT_COMMIT := $(or $(shell git rev-parse --short=12 HEAD 2>/dev/null),unknown)$(if $(shell git --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null),-dirty)

.PHONY: all deps test-deps build run install test test-core fmt-check lint bench releases sweep-release fuzz clean

all: build

# What building and running need (`make run`); `make test` adds what the tests drive.
deps:
	@scripts/ensure-deps.sh run

test-deps:
	@scripts/ensure-deps.sh test

build: deps
	$(CARGO) build $(CARGO_FLAGS)

# The main job: SV1 against SV2 configurations A, C and D (about 6 minutes), summary
# printed, run written under runs/. Another scenario: make run SCENARIO=scenarios/x.toml;
# options: make run ARGS="--set link.rtt_ms=150 --hashrate 10PH/s".
SCENARIO ?= scenarios/sv1-vs-sv2.toml
ARGS ?=
run: build
	$(RUN) run $(SCENARIO) $(ARGS)

# The binary on your PATH: PREFIX/bin/stratum-bench (default ~/.local/bin).
PREFIX ?= $(HOME)/.local
install: build
	install -D -m 755 $(BUILD_DIR)/release/stratum-bench $(PREFIX)/bin/stratum-bench

# A real SV1 miner the tests point at our pool: para 0.6.0's CPU miner (crates.io), built
# once into the build cache (never into the repository).
BUILD_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
TOOLS_DIR := $(BUILD_DIR)/tools
SV1_MINER := $(TOOLS_DIR)/bin/para

$(SV1_MINER):
	+env -u CARGO_TARGET_DIR $(CARGO) install para --version 0.6.0 --locked --root $(TOOLS_DIR)

# Tests run in the release profile, like the binary, so everything compiles once, under
# cargo-nextest (.config/nextest.toml: a run that measures alone, one that only counts
# two at a time, a per-test timeout that names a hung test, no fail-fast, no retries),
# with a Docker daemon started for the tests when none runs (the container tests need
# one). Formatting is checked before anything is installed; clippy and the test build run
# beside the tools' builds. The release tests run an earlier SRI release, installed from
# crates.io into the build cache. docs/testing.md says what each test checks and how to
# run one family alone (make test TESTS='-E ...').
SRI_TEST_RELEASE := 0.6.0
NEXTEST_VERSION := 0.9.151
NEXTEST := $(TOOLS_DIR)/bin/cargo-nextest
TESTS ?=
TEST_ENV := STRATUM_BENCH_SV1_MINER=$(SV1_MINER) STRATUM_BENCH_SRI_RELEASE=$(TOOLS_DIR)/sri-$(SRI_TEST_RELEASE)

$(NEXTEST):
	+env -u CARGO_TARGET_DIR $(CARGO) install cargo-nextest --version $(NEXTEST_VERSION) \
		--locked --root $(TOOLS_DIR) --no-default-features --features default-no-update

fmt-check:
	@scripts/ensure-deps.sh toolchain
	$(CARGO) fmt --all -- --check

test: fmt-check
	@scripts/ensure-deps.sh test
	@scripts/source-mtimes.sh restore $(BUILD_DIR)
	@$(MAKE) --no-print-directory -j$(JOBS) test-build test-tools
	$(TEST_ENV) scripts/with-docker.sh scripts/run-tests.sh $(NEXTEST) default $(TESTS)

# Clippy, then the tests' build (what nextest would build first, so its own build step
# finds it done), beside the tools' builds: the cargo builds share make's job slots, one
# a core (cargo takes them through make's jobserver), so each fills a core another leaves
# idle while it links or compiles one large crate (docs/testing.md has the cold path's
# steps). Each tool builds in a temporary directory of its own, as `cargo install` does
# by default: in the workspace's, each build would wait on the other's lock.
JOBS ?= $(shell nproc)
.PHONY: clippy test-build test-tools sri-test-release
clippy:
	+$(CARGO) clippy $(CARGO_FLAGS) --all-targets -- -D warnings

test-build: clippy
	+$(CARGO) test $(CARGO_FLAGS) --no-run
	@scripts/source-mtimes.sh record $(BUILD_DIR)

test-tools: $(NEXTEST) $(SV1_MINER) sri-test-release

sri-test-release:
	+scripts/install-sri-releases.sh $(TOOLS_DIR) $(SRI_TEST_RELEASE)

# The tests of a real Bitcoin Core: Core built once into the build cache by
# scripts/build-bitcoin-core.sh from the source the Rust registry vendors (about half an
# hour on 2 cores, once), or the one STRATUM_BENCH_BITCOIN_NODE names. Run it before any
# change to the node, its IPC face, the taps or the Core network role.
CORE_SOURCE := libbitcoinkernel-sys@0.4.1
CORE_BUILD_DIR := $(BUILD_DIR)/bitcoin-core
STRATUM_BENCH_BITCOIN_NODE ?= $(CORE_BUILD_DIR)/bin/bitcoin-node

$(CORE_BUILD_DIR)/bin/bitcoin-node:
	scripts/build-bitcoin-core.sh --from-crate $(CORE_SOURCE) $(CORE_BUILD_DIR)

test-core: test-deps $(NEXTEST) $(STRATUM_BENCH_BITCOIN_NODE)
	$(TEST_ENV) STRATUM_BENCH_BITCOIN_NODE=$(abspath $(STRATUM_BENCH_BITCOIN_NODE)) \
		scripts/run-tests.sh $(NEXTEST) core $(TESTS)

# Fuzzing: every target in fuzz/fuzz_targets for FUZZ_SECONDS each (or FUZZ_TARGETS only),
# with cargo-fuzz on the nightly toolchain, both installed when missing. `make test` only
# replays the seeds (crates/cli/tests/fuzz_corpus.rs).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
CARGO_FUZZ := $(TOOLS_DIR)/bin/cargo-fuzz

$(CARGO_FUZZ):
	$(CARGO) install cargo-fuzz --version 0.13.2 --locked --root $(TOOLS_DIR)

fuzz: deps $(CARGO_FUZZ)
	scripts/fuzz.sh $(FUZZ_SECONDS) $(CARGO_FUZZ) $(BUILD_DIR)/fuzz $(FUZZ_TARGETS)

bench: build
	$(RUN) bench template --mempool 6000 --iterations 200

# Release against release (docs/releases.md). `make releases` installs SRI releases from
# crates.io into the build cache, one directory each (TOOLS_DIR/sri-VERSION), each pool
# release with the translator and JDC published beside it (about 5 minutes a release on 2
# cores, once). `make sweep-release` runs configurations A and C on the pinned release and
# the two before it, every role of each as its own binary, five runs a release (about 25
# minutes on 2 cores); FAIL_ON_REGRESSION=PCT gates it.
SRI_RELEASES ?= 0.7.0 0.6.0 0.5.0
SWEEP_RELEASE_OUT ?= runs/sweep-release
comma := ,
empty :=
space := $(empty) $(empty)
SWEEP_RELEASE_GATE := $(if $(FAIL_ON_REGRESSION),--fail-on-regression $(FAIL_ON_REGRESSION))

releases: deps
	scripts/install-sri-releases.sh $(TOOLS_DIR) $(SRI_RELEASES)

sweep-release: build releases
	$(RUN) sweep scenarios/release.toml --repeat 5 --out $(SWEEP_RELEASE_OUT) $(SWEEP_RELEASE_GATE) \
		--vary release=$(subst $(space),$(comma),$(foreach r,$(SRI_RELEASES),$(TOOLS_DIR)/sri-$(firstword $(subst =, ,$(r)))))

# What every commit passes: formatting and clippy with warnings as errors.
lint: fmt-check deps
	@$(MAKE) --no-print-directory clippy

clean:
	$(CARGO) clean

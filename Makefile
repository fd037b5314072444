# The two front-door commands: `make run` and `make test`. Both install what is missing.
CARGO ?= cargo
CARGO_FLAGS := --release --locked
RUN := $(CARGO) run $(CARGO_FLAGS) --quiet --bin stratum-bench --

.PHONY: all deps build run test lint bench sweep-release fuzz clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(CARGO) build $(CARGO_FLAGS)

# The main job: SV1 against SV2 configurations C and D (about 2.5 minutes), summary printed,
# run written under runs/.
SCENARIO ?= scenarios/sv1-vs-sv2.toml
run: build
	$(RUN) run $(SCENARIO)

# A real SV1 miner the tests point at our pool: para 0.6.0's CPU miner (crates.io), built
# once into the build cache (never into the repository).
BUILD_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
TOOLS_DIR := $(BUILD_DIR)/tools
SV1_MINER := $(TOOLS_DIR)/bin/para

$(SV1_MINER):
	$(CARGO) install para --version 0.6.0 --locked --root $(TOOLS_DIR)

# Tests run in the release profile, like the binary, so everything compiles once; with a
# Docker daemon, started for the tests when none runs (the container tests need one).
test: deps $(SV1_MINER)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --all-targets -- -D warnings
	STRATUM_BENCH_SV1_MINER=$(SV1_MINER) scripts/with-docker.sh $(CARGO) test $(CARGO_FLAGS)

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

# Release against release: SRI's pool_sv2 0.7.0 built again from crates.io (a second build
# of the pinned version into the build cache: its default features and own lockfile, its
# own binary) against the one linked into stratum-bench, five runs each of configuration
# C (about 20 minutes on 2 cores).
SRI_POOL_B := $(TOOLS_DIR)/sri-pool-0.7.0/bin/pool_sv2
SWEEP_RELEASE_OUT ?= runs/sweep-release

$(SRI_POOL_B):
	$(CARGO) install pool_sv2 --version 0.7.0 --locked --root $(TOOLS_DIR)/sri-pool-0.7.0

sweep-release: build $(SRI_POOL_B)
	$(RUN) sweep scenarios/config-c.toml --repeat 5 --duration 60s --out $(SWEEP_RELEASE_OUT) \
		--vary roles.pool.command=builtin,$(SRI_POOL_B)

clean:
	$(CARGO) clean

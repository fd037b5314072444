# The two front-door commands: `make run` and `make test`. Both install what is missing.
CARGO ?= cargo
CARGO_FLAGS := --release --locked
RUN := $(CARGO) run $(CARGO_FLAGS) --quiet --bin stratum-bench --

.PHONY: all deps build run test lint bench clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(CARGO) build $(CARGO_FLAGS)

# Until the SV1 baseline lands, the main job shows the simulated network working: a node
# with 5 s blocks for 30 s, its RPC on 127.0.0.1:18443 (user bench, password bench).
run: build
	$(RUN) node --rpc-user bench --rpc-password bench --block-interval 5s --duration 30s

# Tests run in the release profile, like the binary, so everything compiles once.
test: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --all-targets -- -D warnings
	$(CARGO) test $(CARGO_FLAGS)

bench: build
	$(RUN) bench template --mempool 6000 --iterations 200

clean:
	$(CARGO) clean

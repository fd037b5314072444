#!/usr/bin/env bash
# Installs what building and running (`ensure-deps.sh run`) or testing (`ensure-deps.sh test`)
# stratum-bench needs and is missing; `ensure-deps.sh toolchain` checks Rust, rustfmt and
# clippy alone (what `make test` needs to check formatting before any install).
# As root it installs Debian packages itself; otherwise it names them and stops.
set -euo pipefail

MIN_RUST="1.89"

# What for: `run` (building and running: `make build`, `make run`) or `test` (`make test`:
# everything the tests drive as well). Debian packages, each with a command (or file) that
# shows it is present.
purpose="${1:-test}"
case "$purpose" in
  run | test | toolchain) ;;
  *) echo "ensure-deps: say what for: run, test or toolchain (got '$purpose')" >&2; exit 2 ;;
esac

# Building: capnproto/libcapnp-dev are what the SRI pool and JDC build against, and
# libzmq3-dev is the libzmq the node publishes its ZMQ notifications with, as bitcoind does.
source "$(dirname "$0")/debs.sh"
[[ "$purpose" == toolchain ]] || ensure_debs \
  build-essential=cc \
  pkg-config=pkg-config \
  capnproto=capnp \
  libcapnp-dev=/usr/include/capnp/common.h \
  libzmq3-dev=/usr/include/zmq.h

# Testing: prometheus brings promtool, which checks our live metrics; nodejs/npm run an
# existing SV1 pool (stratum-pool-sha256) against our node; chromium prints and checks the
# HTML reports (and `report --pdf`), poppler-utils reads the PDF back; docker.io runs roles
# in containers (the image every role runs from, internal networks, the collector), and
# docker-compose starts what `stratum-bench deploy` writes; iproute2 and iptables make the
# two Docker hosts of scripts/two-hosts.sh (namespaces, the veth between them).
if [[ "$purpose" == test ]]; then
  ensure_debs \
    prometheus=promtool \
    nodejs=node \
    npm=npm \
    chromium=chromium \
    poppler-utils=pdftotext \
    docker.io=dockerd \
    docker-compose=docker-compose \
    iproute2=ip \
    iptables=iptables
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "ensure-deps: no Rust toolchain found; install Rust $MIN_RUST or newer (https://rustup.rs), then run make again" >&2
  exit 1
fi
have=$(rustc --version | awk '{print $2}')
if [[ "$(printf '%s\n%s\n' "$MIN_RUST" "$have" | sort -V | head -n1)" != "$MIN_RUST" ]]; then
  echo "ensure-deps: Rust $have is older than the $MIN_RUST this workspace needs (rustup update)" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      rustup component add "$component"
    else
      echo "ensure-deps: cargo $component is missing (rustup component add $component)" >&2
      exit 1
    fi
  fi
done

#!/usr/bin/env bash
# Installs what building and testing stratum-bench needs and is missing.
# As root it installs Debian packages itself; otherwise it names them and stops.
set -euo pipefail

MIN_RUST="1.88"

# Debian packages, each with a command (or file) that shows it is present.
# capnproto/libcapnp-dev are what the SRI pool and JDC build against; prometheus brings
# promtool, which checks our live metrics in the tests; nodejs/npm run an existing SV1 pool
# (stratum-pool-sha256) against our node in the tests; chromium prints and checks the HTML
# report, poppler-utils reads the PDF back; libzmq3-dev is the libzmq the node publishes
# its ZMQ notifications with, as bitcoind does; docker.io runs roles in containers (the
# image every role runs from, internal networks, the collector) in the tests, and
# docker-compose starts what `stratum-bench deploy` writes.
source "$(dirname "$0")/debs.sh"
ensure_debs \
  build-essential=cc \
  pkg-config=pkg-config \
  capnproto=capnp \
  libcapnp-dev=/usr/include/capnp/common.h \
  libzmq3-dev=/usr/include/zmq.h \
  prometheus=promtool \
  nodejs=node \
  npm=npm \
  chromium=chromium \
  poppler-utils=pdftotext \
  docker.io=dockerd \
  docker-compose=docker-compose

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

#!/usr/bin/env bash
# Builds Bitcoin Core's `bitcoin-node` (the multiprocess node, with its Mining IPC socket)
# from a Bitcoin Core source tree, as a user who wants stratum-bench to run against a real
# node would: IPC on, no GUI, no tests, no benchmarks. ZMQ and the wallet are built when
# the tree has them. It installs the Debian packages the build needs when run as root
# (names them otherwise), and prints the binary's path and version at the end.
#
#   scripts/build-bitcoin-core.sh SRC_DIR [BUILD_DIR]
#   scripts/build-bitcoin-core.sh --from-crate libbitcoinkernel-sys@0.4.1 [BUILD_DIR]
#
# SRC_DIR: a Bitcoin Core checkout (git clone https://github.com/bitcoin/bitcoin, then
# `git checkout v31.0` or another tag). --from-crate takes the source tree the Rust
# registry's libbitcoinkernel-sys crate vendors (0.4.1: Core 31.99 from master, without
# src/zmq and src/wallet), for machines that reach the package registries and not GitHub.
# BUILD_DIR defaults to ~/.cache/stratum-bench/bitcoin-core/<tree's version>.
# Then: STRATUM_BENCH_BITCOIN_NODE=<BUILD_DIR>/bin/bitcoin-node make test-core
set -euo pipefail

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -ge 1 ]] || usage 2
[[ "$1" == -h || "$1" == --help ]] && usage 0

if [[ "$1" == --from-crate ]]; then
  spec="${2:?--from-crate needs CRATE@VERSION, e.g. libbitcoinkernel-sys@0.4.1}"
  shift 2
  crate="${spec%@*}"
  version="${spec#*@}"
  [[ "$crate" != "$spec" && -n "$version" ]] || { echo "build-bitcoin-core: --from-crate wants CRATE@VERSION, got '$spec'" >&2; exit 2; }
  # Cargo fetches the crate into its registry cache; a throwaway project asks for it.
  fetcher=$(mktemp -d)
  trap 'rm -rf "$fetcher"' EXIT
  mkdir -p "$fetcher/src" && : >"$fetcher/src/lib.rs"
  printf '[package]\nname = "fetch-core-source"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' \
    "$crate" "$version" >"$fetcher/Cargo.toml"
  (cd "$fetcher" && cargo fetch --quiet)
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate-$version"/bitcoin 2>/dev/null | head -n1 || true)
  [[ -n "$src" ]] || { echo "build-bitcoin-core: $crate $version vendors no bitcoin/ source tree" >&2; exit 1; }
else
  src="$1"
  shift
fi
src=$(cd "$src" && pwd)
[[ -f "$src/CMakeLists.txt" && -f "$src/src/init/bitcoin-node.cpp" ]] || {
  echo "build-bitcoin-core: $src is not a Bitcoin Core source tree with the multiprocess node (CMakeLists.txt and src/init/bitcoin-node.cpp)" >&2
  exit 1
}
[[ -d "$src/src/ipc" ]] || { echo "build-bitcoin-core: $src has no src/ipc: this Core has no Mining IPC" >&2; exit 1; }

core_version=$(sed -n 's/^set(CLIENT_VERSION_\(MAJOR\|MINOR\|BUILD\) \([0-9]*\))/\2/p' "$src/CMakeLists.txt" | paste -sd.)
[[ "$core_version" =~ ^([0-9]+)\.[0-9]+\.[0-9]+$ ]] || { echo "build-bitcoin-core: cannot read the version from $src/CMakeLists.txt" >&2; exit 1; }
# Mining IPC of v31 (Init.makeMining @3) is the oldest the roles here speak.
((BASH_REMATCH[1] >= 31)) || { echo "build-bitcoin-core: $src is Bitcoin Core $core_version; stratum-bench needs v31 or later (its Mining IPC)" >&2; exit 1; }
build="${1:-$HOME/.cache/stratum-bench/bitcoin-core/$core_version}"

# What the tree lacks is turned off, and said: a node without ZMQ tells SV1 pools of blocks
# only through getblocktemplate long polling; one without a wallet cannot fund itself.
options=(-DENABLE_IPC=ON -DBUILD_GUI=OFF -DBUILD_TESTS=OFF -DBUILD_BENCH=OFF
  -DBUILD_FUZZ_BINARY=OFF -DBUILD_UTIL=OFF -DBUILD_TX=OFF -DBUILD_CLI=ON
  -DBUILD_DAEMON=ON -DCMAKE_BUILD_TYPE=Release)
debs=(build-essential=c++ cmake=cmake pkg-config=pkg-config capnproto=capnp
  libcapnp-dev=/usr/include/capnp/common.h libboost-dev=/usr/include/boost/version.hpp
  libevent-dev=/usr/include/event2/event.h)
if [[ -d "$src/src/zmq" ]]; then
  options+=(-DWITH_ZMQ=ON); debs+=(libzmq3-dev=/usr/include/zmq.h)
else
  options+=(-DWITH_ZMQ=OFF); echo "build-bitcoin-core: the tree has no src/zmq: built without ZMQ"
fi
if [[ -d "$src/src/wallet" ]]; then
  options+=(-DENABLE_WALLET=ON); debs+=(libsqlite3-dev=/usr/include/sqlite3.h)
else
  options+=(-DENABLE_WALLET=OFF); echo "build-bitcoin-core: the tree has no src/wallet: built without a wallet"
fi
if [[ ! -f "$src/src/node/data/ip_asn.dat" ]]; then
  options+=(-DWITH_EMBEDDED_ASMAP=OFF); echo "build-bitcoin-core: the tree has no ip_asn.dat: built without the embedded ASMap"
fi

DEBS_WHO=build-bitcoin-core
source "$(dirname "$0")/debs.sh"
ensure_debs "${debs[@]}"

echo "build-bitcoin-core: Bitcoin Core $core_version from $src into $build"
mkdir -p "$(dirname "$build")"
cmake -S "$src" -B "$build" "${options[@]}" >"$build.configure.log" 2>&1 || {
  tail -n 30 "$build.configure.log" >&2
  echo "build-bitcoin-core: configure failed; the whole log is $build.configure.log" >&2
  exit 1
}
grep -q "IPC .*ON" "$build.configure.log" || { echo "build-bitcoin-core: configured without IPC (see $build.configure.log)" >&2; exit 1; }
cmake --build "$build" --target bitcoin-node bitcoin-cli -j "$(nproc)"
node="$build/bin/bitcoin-node"
[[ -x "$node" ]] || { echo "build-bitcoin-core: the build made no $node" >&2; exit 1; }
"$node" -version | head -n1
echo "build-bitcoin-core: built $node"
echo "build-bitcoin-core: STRATUM_BENCH_BITCOIN_NODE=$node make test-core"

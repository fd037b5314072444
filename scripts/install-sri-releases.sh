#!/bin/sh
# Installs SRI releases from crates.io into the build cache (never into the repository),
# one directory a release: `cargo install --root DIR` puts the binaries in DIR/bin and
# cargo's record of what it installed in DIR/.crates2.json. A release is named by its
# pool_sv2 version, with the translator and JDC SRI published beside it (built on the same
# stratum-apps); a release not listed here is given as VERSION=crate@version,...
#   scripts/install-sri-releases.sh TOOLS_DIR 0.7.0 0.6.0 0.5.0
#   scripts/install-sri-releases.sh TOOLS_DIR 0.8.0=pool_sv2@0.8.0,translator_sv2@0.7.0,jd_client_sv2@0.7.0
# Each release lands in TOOLS_DIR/sri-VERSION; cargo skips what is already installed.
# Built without default features, as the pinned release is linked into stratum-bench
# (Cargo.toml): the monitoring stack (an HTTP server, ASIC telemetry, about 200 crates) is
# in neither side, so releases compare as equals, and a release installs in about half the
# time.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 TOOLS_DIR RELEASE..." >&2; exit 64; }
tools=$1
shift
cargo=${CARGO:-cargo}
# The releases' builds share one target directory, apart from stratum-bench's own.
export CARGO_TARGET_DIR="$tools/sri-release-build"

roles_of() {
    case $1 in
    *=*) echo "${1#*=}" | tr ',' ' ' ;;
    0.7.0) echo "pool_sv2@0.7.0 translator_sv2@0.6.0 jd_client_sv2@0.6.0" ;;
    0.6.0) echo "pool_sv2@0.6.0 translator_sv2@0.5.0 jd_client_sv2@0.5.0" ;;
    0.5.0) echo "pool_sv2@0.5.0 translator_sv2@0.4.0 jd_client_sv2@0.4.0" ;;
    *)
        echo "SRI release $1: not one this script knows (0.7.0, 0.6.0, 0.5.0); give it as $1=pool_sv2@$1,translator_sv2@V,jd_client_sv2@V" >&2
        exit 64
        ;;
    esac
}

for release in "$@"; do
    roles=$(roles_of "$release")
    root="$tools/sri-${release%%=*}"
    for role in $roles; do
        echo "SRI release ${release%%=*}: ${role%@*} ${role#*@} into $root"
        "$cargo" install "${role%@*}" --version "${role#*@}" --locked --no-default-features --root "$root" --quiet
    done
done

# Sourced, not run: ensure_debs PKG=PROBE... installs the Debian packages whose probe (a
# command, or an absolute path) is missing. As root it installs them itself; otherwise it
# names them and fails, so the caller stops before a build that cannot work.
ensure_debs() {
  local who="${DEBS_WHO:-ensure-deps}" missing=() pair pkg probe
  for pair in "$@"; do
    pkg="${pair%%=*}"
    probe="${pair#*=}"
    if [[ "$probe" == /* ]]; then
      [[ -e "$probe" ]] || missing+=("$pkg")
    else
      command -v "$probe" >/dev/null 2>&1 || missing+=("$pkg")
    fi
  done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "$who: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "$who: missing Debian packages: ${missing[*]}" >&2
    echo "$who: install them with: sudo apt-get install ${missing[*]}" >&2
    return 1
  fi
}

#!/usr/bin/env bash
# Two Docker hosts on one machine, for swarm runs with the pool and the farm apart: two
# dockerd daemons, each in a network namespace of its own (sbh-pool, sbh-farm) joined only
# by a veth pair, made one swarm (pool: manager, node label site=pool; farm: worker,
# site=farm). Nothing routes off the machine and nothing listens in the root namespace:
# each daemon answers on a unix socket only, its swarm ports are on the veth.
#   two-hosts.sh up | down | status | env [pool|farm]
# Needs root; Debian's docker.io (dockerd, containerd, runc), iproute2, iptables,
# util-linux (nsenter, unshare), kmod (modprobe, where vxlan is a module).
set -Eeuo pipefail

RUN=/run/stratum-bench/two-hosts      # sockets, pidfiles, exec-roots, logs
DATA=/var/lib/stratum-bench/two-hosts # data-roots: images, swarm state
declare -A ADDR=([pool]=10.213.0.1 [farm]=10.213.0.2)
TIMEOUT=30                            # seconds a daemon or the swarm may take
# Paths dockerd 20.10 and containerd write to whatever their flags say (key.json, plugins,
# shim sockets, load-balancer files): each daemon gets tmpfs of its own over them.
SHADOWED=(/etc/docker /run/docker /run/containerd /var/lib/docker)

say() { echo "two-hosts: $*"; }
err() { echo "two-hosts: $*" >&2; }
sock() { echo "unix://$RUN/$1/docker.sock"; }
d() { local h=$1; shift; timeout 20 docker -H "$(sock "$h")" "$@"; }
answers() { timeout 5 docker -H "$(sock "$1")" version --format '{{.Server.Version}}' >/dev/null 2>&1; }
need_root() { [[ $(id -u) == 0 ]] || { err "run as root (namespaces, dockerd)"; exit 1; }; }
is_up() {
  answers pool && answers farm &&
    [[ $(d pool node ls --filter node.label=site --format '{{.Status}}' 2>/dev/null | grep -c Ready) == 2 ]]
}

# Names the host and what failed, shows the end of its daemon's log, and exits (up's trap
# then removes everything it started).
fail() {
  local h=$1; shift
  err "$h host: $*"
  [[ -s $RUN/$h/dockerd.log ]] || exit 1
  err "the end of the $h host's dockerd log ($RUN/$h/dockerd.log):"
  tail -n 12 "$RUN/$h/dockerd.log" | sed 's/^/    /' >&2
  exit 1
}

# Two namespaces, loopback up in each, one veth between them (made in place: no end of it
# is ever in the root namespace).
make_net() {
  ip netns add sbh-pool || fail pool "cannot create network namespace sbh-pool"
  ip netns add sbh-farm || fail farm "cannot create network namespace sbh-farm"
  ip link add sbh0 netns sbh-pool type veth peer name sbh0 netns sbh-farm ||
    fail pool "cannot create the veth pair (the kernel's veth)"
  for h in pool farm; do
    ip -n "sbh-$h" link set lo up
    ip -n "sbh-$h" addr add "${ADDR[$h]}/30" dev sbh0
    ip -n "sbh-$h" link set sbh0 up
  done
}

# The kernel's part: vxlan (overlay networks) is tried in the pool's namespace, so its lack
# is named before any daemon starts. IPVS is optional: without it swarm services need
# --endpoint-mode dnsrr (a VIP does not route).
check_kernel() {
  if command -v modprobe >/dev/null; then modprobe -qa veth vxlan overlay br_netfilter ip_vs 2>/dev/null || true; fi
  ip -n sbh-pool link add sbh-vx type vxlan id 4242 dstport 4789 dev lo 2>/dev/null ||
    fail pool "the kernel has no vxlan (overlay networks need it): modprobe vxlan"
  ip -n sbh-pool link del sbh-vx
  [[ -e /proc/net/ip_vs ]] || say "note: no IPVS in this kernel: swarm services need --endpoint-mode dnsrr"
}

# Starts a host's dockerd in its namespace and in a mount namespace of its own, so its
# mounts (layers, netns handles) stay out of the machine's; SHADOWED are tmpfs of its own
# there (a system containerd's socket in /run/containerd would be shared otherwise, and
# nothing lands in the machine's /var/lib/docker); its own UTS namespace names the swarm
# node sbh-<host>. Its containers go under the cgroup /sbh-<host>.
start_daemon() {
  local h=$1 dir=$RUN/$1
  mkdir -p "$dir/exec" "$DATA/$h"
  echo '{}' >"$dir/daemon.json"  # not the machine's /etc/docker/daemon.json
  # shellcheck disable=SC2016 # expanded by the inner sh
  setsid nsenter --net="/run/netns/sbh-$h" unshare --mount --uts --propagation slave sh -c '
    for m in $2; do mount -n -t tmpfs "sbh-$1" "$m" || exit 1; done
    hostname "sbh-$1" && shift 2 && exec dockerd "$@"' sh "$h" "${SHADOWED[*]}" \
    --host "$(sock "$h")" --data-root "$DATA/$h" --exec-root "$dir/exec" \
    --pidfile "$dir/docker.pid" --config-file "$dir/daemon.json" \
    --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "/sbh-$h" \
    --bridge none --userland-proxy=false --shutdown-timeout 3 \
    </dev/null >"$dir/dockerd.log" 2>&1 &
  echo $! >"$dir/launcher.pid"  # dockerd's own pid once the launcher has exec'd it
}

wait_daemon() {
  local h=$1 pid
  pid=$(cat "$RUN/$h/launcher.pid")
  for _ in $(seq $((TIMEOUT * 4))); do
    answers "$h" && return 0
    kill -0 "$pid" 2>/dev/null || fail "$h" "dockerd exited while starting"
    sleep 0.25
  done
  fail "$h" "dockerd did not answer on $(sock "$h") within ${TIMEOUT}s"
}

form_swarm() {
  local a=${ADDR[pool]} token id h
  # The swarm makes docker_gwbridge for containers on overlays that reach out: made here
  # first, internal, so that none does.
  for h in pool farm; do
    d "$h" network create --driver bridge --internal --opt com.docker.network.bridge.name=docker_gwbridge \
      --opt com.docker.network.bridge.enable_icc=false docker_gwbridge >/dev/null ||
      fail "$h" "cannot create an internal docker_gwbridge"
  done
  d pool swarm init --advertise-addr "$a" --listen-addr "$a:2377" \
    --default-addr-pool 10.214.0.0/16 >/dev/null || fail pool "docker swarm init failed"
  # No routing mesh: it publishes ports on every node (and needs IPVS).
  echo y | d pool network rm ingress >/dev/null || fail pool "cannot remove the ingress network"
  nsenter --net=/run/netns/sbh-farm timeout 5 bash -c "</dev/tcp/$a/2377" 2>/dev/null ||
    fail farm "cannot reach the pool host's swarm port $a:2377 over the veth" \
      "($(ip -n sbh-farm -br addr show sbh0 2>&1 | tr -s ' '))"
  token=$(d pool swarm join-token -q worker) || fail pool "no worker join token"
  d farm swarm join --token "$token" --advertise-addr "${ADDR[farm]}" \
    --listen-addr "${ADDR[farm]}:2377" "$a:2377" >/dev/null || fail farm "docker swarm join $a:2377 failed"
  for h in pool farm; do
    id=$(d "$h" info --format '{{.Swarm.NodeID}}')
    d pool node update --label-add "site=$h" "$id" >/dev/null || fail "$h" "cannot label node $id site=$h"
  done
  for _ in $(seq $((TIMEOUT * 2))); do is_up && return 0; sleep 0.5; done
  fail farm "the worker is not Ready in the pool's swarm within ${TIMEOUT}s"
}

# up's exit trap: a failed up leaves nothing behind.
undo() {
  local status=$?
  trap - EXIT ERR
  if ((status)); then err "up failed: removing what it started"; down >/dev/null 2>&1 || true; fi
  exit "$status"
}

up() {
  local c m
  need_root
  for c in ip:iproute2 nsenter:util-linux iptables:iptables dockerd:docker.io docker:docker.io containerd:containerd; do
    command -v "${c%:*}" >/dev/null || { err "${c%:*} is missing (Debian package ${c#*:})"; exit 1; }
  done
  if is_up; then say "already up"; status; return 0; fi
  if [[ -e /run/netns/sbh-pool || -e /run/netns/sbh-farm || -d $RUN || -d $DATA ]]; then
    say "removing what an earlier up left"; down >/dev/null
  fi
  trap 'err "failed: $BASH_COMMAND (line $LINENO)"' ERR
  trap undo EXIT
  make_net
  check_kernel
  mkdir -p "$RUN"
  for m in "${SHADOWED[@]}"; do  # mount points; those made here go with down
    [[ -d $m ]] || { mkdir -p "$m"; echo "$m" >>"$RUN/made"; }
  done
  start_daemon pool; start_daemon farm  # in parallel: each takes seconds
  wait_daemon pool; wait_daemon farm
  form_swarm
  trap - EXIT ERR
  say "up in ${SECONDS}s"
  status
}

# A host's dockerd while it runs (its pid checked against its command line: no reuse).
daemon_pid() {
  local pid
  pid=$(cat "$RUN/$1/launcher.pid" 2>/dev/null) && grep -qsF "$RUN/$1/" "/proc/$pid/cmdline" && echo "$pid"
}

down() {
  local h pid left pids=()
  need_root
  for h in farm pool; do
    if answers "$h"; then d "$h" swarm leave --force >/dev/null 2>&1 || true; fi
  done
  # SIGTERM to both (each stops its containers, 3 s at most, then its containerd); SIGKILL
  # to one not gone in 20 s.
  for h in farm pool; do
    if pid=$(daemon_pid "$h"); then kill "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 80); do kill -0 "$pid" 2>/dev/null || continue 2; sleep 0.25; done
    err "dockerd $pid did not stop in 20 s: killing it"; kill -9 "$pid" 2>/dev/null || true
  done
  for h in farm pool; do
    # Whatever outlived its daemon (a shim, a containerd, a container's process).
    left=$({ [[ -e /run/netns/sbh-$h ]] && ip netns pids "sbh-$h"
      cat /sys/fs/cgroup/*/"sbh-$h"/*/cgroup.procs /sys/fs/cgroup/"sbh-$h"/*/cgroup.procs \
        2>/dev/null; } | sort -u || true)
    # shellcheck disable=SC2086 # one pid a word
    [[ -z $left ]] || { kill -9 $left 2>/dev/null || true; sleep 0.5; }
    [[ ! -e /run/netns/sbh-$h ]] || ip netns del "sbh-$h" || err "cannot remove netns sbh-$h"
    # cgroup v1 (a hierarchy a controller) or v2 (one hierarchy).
    find /sys/fs/cgroup/*/"sbh-$h" /sys/fs/cgroup/"sbh-$h" -depth -type d -exec rmdir {} + \
      2>/dev/null || true
  done
  if [[ -f $RUN/made ]]; then xargs rmdir <"$RUN/made" 2>/dev/null || true; fi
  rm -rf "$RUN" "$DATA"
  rmdir /run/stratum-bench /var/lib/stratum-bench 2>/dev/null || true
  # `ip netns add` mounted /run/netns; leave no mount once no namespace is in it.
  if [[ -d /run/netns && -z $(ls -A /run/netns) ]]; then umount -n /run/netns 2>/dev/null || true; rmdir /run/netns; fi
  say "down"
}

# Exits 1 unless both hosts answer.
status() {
  local h state up=0
  for h in pool farm; do
    if answers "$h"; then
      state=$(d "$h" info --format '{{.Swarm.LocalNodeState}} {{if .Swarm.ControlAvailable}}manager{{else}}worker{{end}}')
    else state="not answering"; up=1; fi
    printf '%s: %s, %s in netns sbh-%s  DOCKER_HOST=%s\n' "$h" "$state" "${ADDR[$h]}" "$h" "$(sock "$h")"
  done
  return $up
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env)  # the pool's (the manager's) or the named host's, to eval; with no name the farm's as a comment
    h=${2:-pool}; [[ -v ADDR[$h] ]] || { err "env: pool or farm"; exit 2; }
    echo "export DOCKER_HOST=$(sock "$h")"
    [[ $# -gt 1 ]] || echo "# farm: DOCKER_HOST=$(sock farm)" ;;
  *) err "usage: $0 up|down|status|env [pool|farm]"; exit 2 ;;
esac

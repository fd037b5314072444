#!/usr/bin/env bash
# Runs a command with a Docker daemon answering and managing a swarm: when no daemon
# answers, starts dockerd (as root) for the command's time; when no swarm is active,
# initialises a one-node swarm on 127.0.0.1; labels this node stratum-bench=test (the
# swarm test places its services by it). Whatever it started it stops after, so the
# container tests run on a fresh machine too. The command's exit status is kept.
set -uo pipefail

# Runs the command in a swarm (made for it when none is active), then leaves one it made.
with_swarm() {
  local made=""
  if [[ $(docker info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null) != active ]]; then
    if ! docker swarm init --advertise-addr 127.0.0.1 >/dev/null; then
      echo "with-docker: cannot initialise a swarm (docker swarm init --advertise-addr 127.0.0.1)" >&2
      return 1
    fi
    made=yes
    echo "with-docker: initialised a one-node swarm for this command; it is left after"
  fi
  docker node update --label-add stratum-bench=test "$(docker info --format '{{.Swarm.NodeID}}')" >/dev/null
  "$@"
  local status=$?
  if [[ -n $made ]]; then
    docker swarm leave --force >/dev/null 2>&1
    docker network rm docker_gwbridge >/dev/null 2>&1
  fi
  return $status
}

if docker info >/dev/null 2>&1; then
  with_swarm "$@"
  exit $?
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "with-docker: no Docker daemon answers, and only root can start one here:" >&2
  echo "with-docker: start it (sudo systemctl start docker) or join the docker group, then run make test again" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "with-docker: dockerd is not installed (apt-get install docker.io; make deps does it)" >&2
  exit 1
fi
log=$(mktemp -t dockerd.XXXXXX.log)
dockerd >"$log" 2>&1 &
daemon=$!
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.5
done
if ! docker info >/dev/null 2>&1; then
  echo "with-docker: dockerd did not start; the end of its log ($log):" >&2
  tail -n 20 "$log" >&2
  kill "$daemon" 2>/dev/null
  exit 1
fi
echo "with-docker: started dockerd (pid $daemon) for this command; it stops after"
with_swarm "$@"
status=$?
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
exit $status

#!/usr/bin/env bash
# Runs a command with a Docker daemon answering: when none does, starts dockerd (as root)
# for the command's time and stops it after, so the container tests run on a fresh
# machine too. The command's exit status is kept.
set -uo pipefail

if docker info >/dev/null 2>&1; then
  exec "$@"
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
"$@"
status=$?
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
exit $status

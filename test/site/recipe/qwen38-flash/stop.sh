#!/usr/bin/env bash
# qwen38-flash: stop and remove the container named in ./.env (and the
# --no-launch helper). Returns as soon as the container is gone; the memory it
# held is given back by the kernel afterwards, so callers wait for it.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"
if [ -f .env ]; then
  set -a
  # shellcheck disable=SC1091
  . ./.env
  set +a
fi
: "${CONTAINER_NAME:=qwen38-flash}"
docker stop -t 30 "$CONTAINER_NAME" >/dev/null 2>&1 || true
docker rm -f "$CONTAINER_NAME" "$CONTAINER_NAME-helper" >/dev/null 2>&1 || true
echo "stop.sh: $CONTAINER_NAME stopped"

#!/usr/bin/env bash
# Everything sm121 and its simulated site need on this machine, installed once and reused:
# Debian packages (OpenSSH server and client, tmux, git, curl, iproute2, procps, python3-venv,
# prometheus, and for the nodes' Docker Engines docker.io, docker-registry and busybox-static),
# Node.js 22 and the Pulumi toolchain (scripts/toolchain.sh), the Python programs the site runs
# (scripts/venvs.sh: the LiteLLM proxy; scripts/vllm.sh: the real vLLM and its tiny model), the npm
# dependencies, and a build. Prints, as its last line, the directory to put first on PATH. Used by
# `npm run demo`, `npm test` and CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v curl >/dev/null 2>&1 || missing+=(curl)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
command -v free >/dev/null 2>&1 || missing+=(procps)
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
# Each simulated node runs Debian's Docker Engine (dockerd, containerd, runc) with its CLI, the site
# serves its images from a registry, and the images' shell tools are a static busybox.
{ [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ]; } || missing+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
{ [ -x /bin/busybox ] || [ -x /usr/bin/busybox ]; } || missing+=(busybox-static)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]};" \
      "install them (sudo apt-get install ${missing[*]}) and run again" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bin=$(bash scripts/toolchain.sh | tail -n 1)
bash scripts/venvs.sh
bash scripts/vllm.sh
export PATH="$bin:$PATH"
if [ ! -d node_modules/@pulumi/pulumi ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi
npm run --silent build >&2
echo "$bin"

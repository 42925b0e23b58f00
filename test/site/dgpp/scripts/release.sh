#!/usr/bin/env bash
# Build a DGPP release tarball from HEAD: dist/dgpp-<short rev>.tar.zst
# (the real script compiles the CUDA kernels for sm_121 first).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
if [ -e "${SIM_NODE_ROOT:-/nonexistent}/etc/dgpp-release-fail" ]; then
  echo "release.sh: building CUDA kernels for sm_121 ..." >&2
  echo "release.sh: nvcc fatal: kernel build failed (test site: \$SIM_NODE_ROOT/etc/dgpp-release-fail exists)" >&2
  exit 1
fi
rev=$(git rev-parse --short=7 HEAD)
echo "release.sh: building CUDA kernels for sm_121 ($rev) ..."
if [ -f "${SIM_NODE_ROOT:-/nonexistent}/etc/dgpp-release-delay-s" ]; then
  sleep "$(cat "$SIM_NODE_ROOT/etc/dgpp-release-delay-s")"
fi
mkdir -p dist
rm -f dist/dgpp-*.tar.zst
git archive --format=tar --prefix="dgpp-$rev/" HEAD | zstd -q -f -o "dist/dgpp-$rev.tar.zst"
echo "dist/dgpp-$rev.tar.zst"

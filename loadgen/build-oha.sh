#!/usr/bin/env bash
# Builds oha (the open-model load tool) into .tools/oha with cargo: `build-oha.sh VERSION`, the version
# harness/tools/oha.py pins (`make setup-oha` reads it from there).
# A build takes 6-12 min on 2 cores, so it is kept in a cache outside the checkout (OHA_CACHE, default
# ~/.cache/polyglot-bench) and copied from there when a fresh clone on the same machine needs it.
set -euo pipefail
VERSION="${1:?usage: build-oha.sh VERSION (the one harness/tools/oha.py pins: make setup-oha)}"
cd "$(dirname "$0")/.."
CACHE="${OHA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polyglot-bench}/oha-$VERSION"
if [ ! -x "$CACHE/bin/oha" ]; then
  command -v cargo >/dev/null || { echo "cargo is missing: install Rust (https://rustup.rs) to build oha"; exit 1; }
  echo "building oha $VERSION with cargo into $CACHE (once per machine; about 6-12 min on 2 cores)"
  cargo install oha --version "$VERSION" --locked --root "$CACHE"
fi
mkdir -p .tools/oha/bin
cp "$CACHE/bin/oha" .tools/oha/bin/oha
.tools/oha/bin/oha --version

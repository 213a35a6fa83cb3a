#!/usr/bin/env bash
# Builds the browser half of the dashboard into target/site: the hydrate wasm module
# (wasm-bindgen output under pkg/), the stylesheet and the public files. With --release the
# module is built with the size-optimised `wasm-release` profile (and shrunk further by
# `wasm-opt -Oz` when binaryen is installed); the tests use the debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=dev
profile_dir=debug
if [[ "${1:-}" == "--release" ]]; then
  profile=wasm-release
  profile_dir=wasm-release
fi
cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate --profile "$profile"
mkdir -p target/site/pkg
wasm-bindgen --target web --no-typescript --out-name mirage --out-dir target/site/pkg \
  "target/wasm32-unknown-unknown/$profile_dir/app.wasm"
if [[ "$profile" != dev ]] && command -v wasm-opt >/dev/null; then
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    -o target/site/pkg/mirage_bg.wasm target/site/pkg/mirage_bg.wasm
fi
cp style/main.css target/site/pkg/mirage.css
cp -r public/. target/site/
# The book, served by the dashboard at /book/ (skipped where mdBook is not installed:
# `scripts/setup.sh test` installs it).
if command -v mdbook >/dev/null; then
  mdbook build docs
fi

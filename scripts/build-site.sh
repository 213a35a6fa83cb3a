#!/usr/bin/env bash
# Builds the browser half of the dashboard into target/site: the hydrate wasm module
# (wasm-bindgen output under pkg/), the stylesheet and the public files.
set -euo pipefail
cd "$(dirname "$0")/.."
profile_dir=debug
cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate
mkdir -p target/site/pkg
wasm-bindgen --target web --no-typescript --out-name mirage --out-dir target/site/pkg \
  "target/wasm32-unknown-unknown/$profile_dir/app.wasm"
cp style/main.css target/site/pkg/mirage.css
cp -r public/. target/site/

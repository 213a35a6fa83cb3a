#!/usr/bin/env bash
# Installs what Mirage needs and is missing. `setup.sh` covers building and serving;
# `setup.sh test` adds what the test suite needs (Chromium, Playwright, PostgreSQL).
# Every step is skipped when the right thing is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130   # must equal the wasm-bindgen crate pinned in Cargo.toml

apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The toolchain and the wasm target are pinned in rust-toolchain.toml; rustup installs
# them on first use, but asking explicitly gives a clear error if it cannot.
rustup show active-toolchain >/dev/null
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

# A C compiler and make: SQLite and jemalloc are built from source with the binary.
command -v cc >/dev/null || apt_install gcc libc6-dev
command -v make >/dev/null || apt_install make

if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  echo "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
  # Without --locked: its lock file names a registry version that is gone.
  cargo install wasm-bindgen-cli --version "=$WASM_BINDGEN_VERSION"
fi

# The book in docs/, served by the dashboard at /book/ (about a minute to build mdBook
# once; no search or server features).
if ! mdbook --version 2>/dev/null | grep -q "v0\.4\."; then
  cargo install mdbook --version "~0.4" --no-default-features --locked
fi

if [ "${1:-}" = test ]; then
  command -v chromium >/dev/null || apt_install chromium
  command -v initdb >/dev/null || [ -x /usr/lib/postgresql/15/bin/initdb ] || apt_install postgresql
  command -v npm >/dev/null || apt_install nodejs npm
  command -v curl >/dev/null || apt_install curl   # the soak launches a run over HTTP
  if [ ! -d e2e/node_modules/@playwright/test ]; then
    (cd e2e && npm ci --no-audit --no-fund --silent)
  fi
fi

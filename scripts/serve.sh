#!/usr/bin/env bash
# One command from a fresh clone to a running dashboard: installs what is missing, builds
# the server (the `serve` profile: dependencies optimised, Mirage's own crates lightly, so
# that a first build stays short) and the size-optimised browser bundle, and starts `mirage serve`
# (SQLite file created, migrated and seeded on first start). Extra arguments go to
# `mirage serve`, e.g. `--addr 127.0.0.1:8080`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build-site.sh --release
exec cargo run --profile serve -p server -- serve "$@"

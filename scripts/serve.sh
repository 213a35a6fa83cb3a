#!/usr/bin/env bash
# One command from a fresh clone to a running dashboard: installs what is missing, builds
# the browser bundle and the server, and starts `mirage serve` (SQLite file created,
# migrated and seeded on first start). Extra arguments go to `mirage serve`, e.g.
# `--addr 127.0.0.1:8080`.
#
# By default both halves are debug builds, the quickest to build from scratch (the first
# page in minutes on two cores). `--release` builds the optimised server (`serve` profile)
# and the size-optimised bundle instead: several times longer to build once, and the figures
# in the book's benchmarks page are for it. Use it for a team's server or large runs.
set -euo pipefail
cd "$(dirname "$0")/.."
release=
args=()
for arg in "$@"; do
  if [[ "$arg" == "--release" ]]; then release=1; else args+=("$arg"); fi
done
scripts/setup.sh
if [[ -n "$release" ]]; then
  scripts/build-site.sh --release
  exec cargo run --profile serve -p server -- serve ${args[@]+"${args[@]}"}
fi
scripts/build-site.sh
exec cargo run -p server -- serve ${args[@]+"${args[@]}"}

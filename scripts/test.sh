#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (SQLite, and PostgreSQL on a throwaway
# local server) and the end-to-end suite in Chromium. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
scripts/build-site.sh

# A throwaway PostgreSQL cluster on a loopback port, removed on exit.
pg_bin=$(dirname "$(command -v initdb || echo /usr/lib/postgresql/15/bin/initdb)")
pg_dir=$(mktemp -d /tmp/mirage-pg.XXXXXX)
pg_port=${MIRAGE_TEST_PG_PORT:-55432}
chown postgres "$pg_dir" 2>/dev/null || true
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() { as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$pg_dir"; }
trap cleanup EXIT
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
  -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1" start >/dev/null
export MIRAGE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"

cargo fmt --all --check
# build-site.sh built the book (a page missing from docs/ fails it); its links are checked
# by the `docs::` integration tests, with the generated CLI reference.
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate -- -D warnings

log=$(mktemp)
cargo build -p server --bin mirage
cargo test --workspace 2>&1 | tee -a "$log"
(cd e2e && npx playwright test) 2>&1 | tee -a "$log"

# The kill -9 soak (see the book's security chapter), three minutes on each store.
scripts/soak.sh --seconds 180
"$(command -v createdb || echo "$pg_bin/createdb")" -h 127.0.0.1 -p "$pg_port" -U postgres mirage_soak
scripts/soak.sh --seconds 180 --db "postgres://postgres@127.0.0.1:$pg_port/mirage_soak"

# One closing line over both runners (the pipes above keep `set -e` semantics via pipefail).
passed=$(grep -oE '([0-9]+) passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -oE '([0-9]+) failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"
echo "tests: $passed passed, $failed failed"

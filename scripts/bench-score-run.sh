#!/usr/bin/env bash
# Scores a stored run from scratch and then the same run exported to a file, back to back,
# with the wall time and peak memory of each. The ratio within a round is the figure to
# compare: this machine's speed drifts between rounds. DB itself is never opened (the run
# is scored in a fresh copy each round), so it keeps whatever scores it had.
#
#   cargo build --release -p server
#   scripts/bench-score-run.sh DB RUN [ROUNDS]
#
# DB: a SQLite file holding RUN, e.g. made by `mirage --db DB run …`. MIRAGE overrides the
# binary (default target/release/mirage).
set -euo pipefail
db=${1:?a SQLite database file}
run=${2:?a run id}
rounds=${3:-3}
mirage=${MIRAGE:-target/release/mirage}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$db" "$work/base.db"
"$mirage" --db "$work/base.db" runs export "$run" --out "$work/run.jsonl" > /dev/null
for round in $(seq "$rounds"); do
    cp "$work/base.db" "$work/run.db"
    /usr/bin/time -f "round $round: score --run  %e s, peak %M KB" \
        "$mirage" --db "$work/run.db" score --run "$run" > /dev/null
    rm -f "$work"/run.db*
    /usr/bin/time -f "round $round: score FILE   %e s, peak %M KB" \
        "$mirage" --db "$work/file.db" score "$work/run.jsonl" > /dev/null
done

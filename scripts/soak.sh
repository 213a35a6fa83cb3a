#!/usr/bin/env bash
# The kill -9 soak: a server and two workers on one database (a SQLite file, or PostgreSQL
# with --db URL), runs launched from the command line and from the dashboard's launch server
# function, and for SECONDS one of the three processes killed with SIGKILL at random
# intervals and started again. Then everything is let finish and the invariants checked:
# every run done, every trial finished exactly once with its steps 0, 1, 2, … and one
# verdict (`mirage runs check`), and the stored scores equal to a re-score of the exported
# trajectories. Prints the figures; exits non-zero on any broken invariant.
#
#   scripts/soak.sh [--seconds 180] [--db URL] [--bin target/debug/mirage]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=180
db=""
bin=target/debug/mirage
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "soak: unknown argument $1 (--seconds N, --db URL, --bin PATH)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "soak: no binary at $bin (cargo build -p server --bin mirage)" >&2; exit 2; }
work=$(mktemp -d /tmp/mirage-soak.XXXXXX)
[ -n "$db" ] || db="$work/soak.db"
export RUST_LOG=warn
m() { "$bin" --db "$db" "$@"; }

pids=(0 0 0)
names=(serve worker-1 worker-2)
port=""
starts=0
start() {
  local i=$1 out
  starts=$(( starts + 1 ))
  case $i in
    0)
      # The binary itself, not through `m`: a backgrounded function is a subshell, and
      # killing that would leave the process running. Each start writes a file of its own,
      # so the port read is this start's.
      out="$work/serve-$starts.out"
      "$bin" --db "$db" serve --addr 127.0.0.1:0 --site-root "$work/site" > "$out" 2>> "$work/serve.err" &
      pids[0]=$!
      port=""
      for _ in $(seq 1 300); do
        port=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$out" 2>/dev/null | tail -1 | sed 's/.*://') || true
        [ -n "$port" ] && break
        sleep 0.1
      done
      [ -n "$port" ] || { echo "soak: serve did not start" >&2; cat "$work/serve.err" >&2; exit 1; } ;;
    *)
      "$bin" --db "$db" worker --concurrency 2 --poll-secs 1 >> "$work/worker-$i.err" 2>&1 &
      pids[$i]=$! ;;
  esac
}
stop_all() {
  # A pid of 0 is a process not started: `kill 0` would signal this whole process group.
  local pid _
  for pid in "${pids[@]}"; do [ "$pid" -gt 0 ] && kill -TERM "$pid" 2>/dev/null || true; done
  # At most 30 s to stop (a SIGTERM'd server drains its runs first), then SIGKILL.
  for _ in $(seq 1 300); do
    local alive=0
    for pid in "${pids[@]}"; do [ "$pid" -gt 0 ] && kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do [ "$pid" -gt 0 ] && kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do [ "$pid" -gt 0 ] && wait "$pid" 2>/dev/null || true; done
  pids=(0 0 0)
}
finish() {
  local status=$?
  stop_all
  if [ "$status" -eq 0 ]; then rm -rf "$work"; else echo "soak: logs and files kept in $work" >&2; fi
}
trap finish EXIT

# The runs: sized so that they outlast the chaos (about 25 baseline trials a second here).
seeds=$(seq -s, 0 $(( seconds / 60 )))
runs=()
runs+=("$(m run --tasks all --agent explorer,credulous --levels L0,L1 --seeds "$seeds" --detach)")
runs+=("$(m run --tasks forum --agent oracle,surface --levels L0,L2 --seeds "$seeds" --detach)")
mkdir -p "$work/site"
start 0; start 1; start 2
# And one from the dashboard, as its launch form sends it.
dash=$(curl -sS -X POST "http://127.0.0.1:$port/api/start_run" -H 'x-mirage-client: soak' \
  --data-urlencode 'form[tasks]=wiki' --data-urlencode 'form[agents]=explorer,oracle' \
  --data-urlencode 'form[levels]=L0,L1' --data-urlencode 'form[conditions]=raw' \
  --data-urlencode "form[seeds]=$seeds" --data-urlencode 'form[concurrency]=2') \
  || { echo "soak: the dashboard launch on port $port failed" >&2; exit 1; }
dash=$(tr -d '"' <<< "$dash")
[[ "$dash" == run-* ]] || { echo "soak: the dashboard launch answered $dash" >&2; exit 1; }
runs+=("$dash")
echo "soak: runs ${runs[*]} on $db; killing for ${seconds}s"

# `runs list` prints "RUN  STATUS  FINISHED/TOTAL finished (N errors)" per run.
unfinished() {
  local list left=0 r line fin total
  list=$(m runs list) || { echo "soak: mirage runs list failed" >&2; return 1; }
  for r in "${runs[@]}"; do
    line=$(grep "^$r " <<< "$list") || { echo "soak: run $r is not listed" >&2; return 1; }
    fin=$(sed -E 's|.* ([0-9]+)/([0-9]+) finished.*|\1|' <<< "$line")
    total=$(sed -E 's|.* ([0-9]+)/([0-9]+) finished.*|\2|' <<< "$line")
    left=$(( left + total - fin ))
  done
  echo "$left"
}
kills=0
deadline=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  sleep "$(( RANDOM % 7 + 2 ))"
  i=$(( RANDOM % 3 ))
  [ "${pids[$i]}" -gt 0 ] && kill -KILL "${pids[$i]}" 2>/dev/null || true
  wait "${pids[$i]}" 2>/dev/null || true
  kills=$(( kills + 1 ))
  echo "soak: killed ${names[$i]} (kill $kills)"
  start "$i"
done

# Let everything finish (a killed process's leases expire first).
left=$(unfinished) || exit 1
echo "soak: $kills kills; $left trials were left when the killing stopped; letting the runs finish"
left=1
for _ in $(seq 1 600); do
  left=$(unfinished) || exit 1
  [ "$left" -eq 0 ] && break
  sleep 2
done
# The worker that finished a run's last trial closes the run right after (a few ms): give
# it that moment before stopping everything, so "every run done" tests the closing itself.
for _ in $(seq 1 20); do
  m runs list | grep -qE "^($(IFS='|'; echo "${runs[*]}"))  active" || break
  sleep 0.5
done
stop_all
[ "$left" -eq 0 ] || { echo "soak: $left trials still queued or running after 20 minutes" >&2; exit 1; }

status=0
same='s/"provenance":"(executed|file)"/"provenance":"-"/g; s/"self_reported":[0-9]+/"self_reported":"-"/g'
m runs check "${runs[@]}" || status=1
list=$(m runs list)
for r in "${runs[@]}"; do
  grep -q "^$r  done" <<< "$list" || { echo "soak: run $r is not done" >&2; status=1; }
  m runs export "$r" --out "$work/$r.jsonl"
  # A re-scored file says its trials came from a file (self-reported); the stored run, that
  # they were executed here. Everything else must be equal, byte for byte.
  m score --run "$r" --json | sed -E "$same" > "$work/$r.stored.json"
  m score "$work/$r.jsonl" --json | sed -E "$same" > "$work/$r.rescored.json"
  if cmp -s "$work/$r.stored.json" "$work/$r.rescored.json"; then
    echo "soak: run $r: stored scores equal a re-score of its export"
  else
    echo "soak: run $r: stored scores differ from a re-score of its export" >&2
    diff <(tr ',' '\n' < "$work/$r.stored.json") <(tr ',' '\n' < "$work/$r.rescored.json") | head -20 >&2 || true
    status=1
  fi
done
# A panic in any process (a kill -9 is no panic) is a failure even if the figures hold.
if grep -l "panicked" "$work"/*.err > /dev/null 2>&1; then
  echo "soak: a process panicked:" >&2
  grep -h -A3 "panicked" "$work"/*.err | head -20 >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "soak: passed ($kills kills over ${seconds}s)" || echo "soak: FAILED" >&2
exit "$status"

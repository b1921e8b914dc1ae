#!/bin/sh
# run.sh PHASE: one phase of the seat-knowledge proof (README.md).
#   train     train.yaml without knowledge, then saucer learn on its results
#   test-off  test.yaml without knowledge
#   test-on   test.yaml with what train's runs taught (--knowledge on)
# The model is the seat (model_seat.py) on loopback; whoever sits there
# answers with model_seat.py next/reply on /tmp/seat/PHASE.
# Environment: SEAT_ROOT (default /tmp/seat), MODEL_SEAT (default
# /work/shared/tools/model_seat.py), SAUCER_BIN (default: built once from
# the repository's committed HEAD into SEAT_ROOT/saucer, so every phase runs
# the same binary; remove it to rebuild).
set -eu

phase=${1:-}
case $phase in
  train) port=18901 suite=train.yaml knowledge=off ;;
  test-off) port=18902 suite=test.yaml knowledge=off ;;
  test-on) port=18903 suite=test.yaml knowledge=on ;;
  *) echo "usage: $0 train|test-off|test-on" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=${SEAT_ROOT:-/tmp/seat}
seat=${MODEL_SEAT:-/work/shared/tools/model_seat.py}
dir=$root/$phase
out=$root/$phase-results
mkdir -p "$root" "$dir"

. "$here/../seat.sh"
bin=${SAUCER_BIN:-$root/saucer}
seat_build "$bin"

if [ "$phase" = test-on ]; then
  [ -s "$root/store/entries.jsonl" ] || { echo "run.sh: the store $root/store is empty: run '$0 train' first" >&2; exit 2; }
fi

seat_start "$seat" "$port" "$dir"
echo "run.sh: seat on 127.0.0.1:$port; answer with: python3 $seat next $dir / python3 $seat reply $dir ..."

export SAUCER_KNOWLEDGE=$root/store SAUCER_RUNS=$root/runs
rc=0
"$bin" eval "$here/$suite" -o "$out" --knowledge "$knowledge" -j 1 || rc=$?
echo "run.sh: saucer eval exited $rc; results in $out"

if [ "$phase" = train ]; then
  "$bin" learn "$out/cases" || rc=$?
fi
python3 "$seat" stats "$dir"
if [ "$phase" != train ] && [ -f "$root/test-off-results/report.json" ] && [ -f "$root/test-on-results/report.json" ]; then
  "$bin" eval compare "$root/test-off-results" "$root/test-on-results" || true
fi
exit $rc

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

[ -f "$seat" ] || { echo "run.sh: no model seat at $seat: set MODEL_SEAT to model_seat.py's path" >&2; exit 2; }

bin=${SAUCER_BIN:-$root/saucer}
if [ ! -x "$bin" ]; then
  repo=$(git -C "$here" rev-parse --show-toplevel)
  src=$(mktemp -d)
  echo "run.sh: building saucer from $(git -C "$repo" rev-parse --short HEAD) (committed HEAD) into $bin"
  git -C "$repo" archive HEAD | tar -x -C "$src"
  (cd "$src" && go build -o "$bin" ./cmd/saucer)
  rm -rf "$src"
fi

if [ "$phase" = test-on ]; then
  [ -s "$root/store/entries.jsonl" ] || { echo "run.sh: the store $root/store is empty: run '$0 train' first" >&2; exit 2; }
fi

# Requests a dead seat left unanswered would be shown first by 'next': set them aside.
for req in "$dir"/req-*.json; do
  [ -e "$req" ] || continue
  n=${req##*/req-}; n=${n%.json}
  if [ ! -e "$dir/resp-$n.json" ]; then
    mkdir -p "$dir/abandoned"
    mv "$req" "$dir/abandoned/req-$n-$(date +%s).json"
    echo "run.sh: set aside request $n, which an earlier seat never answered"
  fi
done

if python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)) != 0)"; then
  echo "run.sh: port $port is already in use (another seat for $phase?): stop it first" >&2; exit 2
fi
python3 "$seat" serve "$port" "$dir" &
seat_pid=$!
trap 'kill "$seat_pid" 2>/dev/null || true' EXIT INT TERM
i=0
until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 50 ] || ! kill -0 "$seat_pid" 2>/dev/null; then
    echo "run.sh: the seat did not start on port $port" >&2; exit 3
  fi
  sleep 0.2
done
echo "run.sh: seat on 127.0.0.1:$port; answer with: python3 $seat next $dir / python3 $seat reply $dir ..."

export OPENAI_BASE_URL=http://127.0.0.1:$port/v1 OPENAI_API_KEY=seat
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

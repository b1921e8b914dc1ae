#!/bin/sh
# run.sh: the desktop suite's tasks labelled seat, with the model seat
# (model_seat.py) as the model and only pixel tools to act with
# (config.yaml); see README.md. Whoever sits in the seat answers with
# model_seat.py next/reply on /tmp/seat/pixels, and sees the screenshots
# with images.py.
# Environment: SEAT_ROOT (default /tmp/seat), MODEL_SEAT (default
# /work/shared/tools/model_seat.py), SAUCER_BIN (default: built once from
# the repository's committed HEAD into SEAT_ROOT/saucer-pixels).
# With SHARD (k/n, saucer eval --shard), only that share of the cases runs,
# on its own port and seat folder (/tmp/seat/pixels-k): n sitters, each a
# fresh mind with its own cases; saucer eval merge joins the shares.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=${SEAT_ROOT:-/tmp/seat}
seat=${MODEL_SEAT:-/work/shared/tools/model_seat.py}
shard=${1:-}
port=18911
dir=$root/pixels
out=$root/pixels-results
if [ -n "$shard" ]; then
  k=${shard%%/*}
  case $k in ''|*[!0-9]*) echo "usage: $0 [k/n]" >&2; exit 2 ;; esac
  port=$((18911 + k)) dir=$root/pixels-$k out=$root/pixels-$k-results
fi
mkdir -p "$root" "$dir"

[ -f "$seat" ] || { echo "run.sh: no model seat at $seat: set MODEL_SEAT to model_seat.py's path" >&2; exit 2; }

bin=${SAUCER_BIN:-$root/saucer-pixels}
if [ ! -x "$bin" ]; then
  repo=$(git -C "$here" rev-parse --show-toplevel)
  src=$(mktemp -d)
  echo "run.sh: building saucer from $(git -C "$repo" rev-parse --short HEAD) (committed HEAD) into $bin"
  git -C "$repo" archive HEAD | tar -x -C "$src"
  (cd "$src" && go build -o "$bin" ./cmd/saucer)
  rm -rf "$src"
fi

if python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)) != 0)"; then
  echo "run.sh: port $port is already in use (another seat?): stop it first" >&2; exit 2
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
echo "run.sh: seat on 127.0.0.1:$port; answer with: python3 $seat next $dir / python3 $seat reply $dir ...; images: $here/images.py $dir"

export OPENAI_BASE_URL=http://127.0.0.1:$port/v1 OPENAI_API_KEY=seat SAUCER_RUNS=$root/runs
rc=0
"$bin" eval "$here/../desktop.yaml" --label seat ${shard:+--shard "$shard"} -m openai:seat -c "$here/config.yaml" -o "$out" -j 1 || rc=$?
echo "run.sh: saucer eval exited $rc; results in $out"
python3 "$seat" stats "$dir"
exit $rc

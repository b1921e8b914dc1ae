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

. "$here/../seat.sh"
bin=${SAUCER_BIN:-$root/saucer-pixels}
seat_build "$bin"
seat_start "$seat" "$port" "$dir"
echo "run.sh: seat on 127.0.0.1:$port; answer with: python3 $seat next $dir / python3 $seat reply $dir ...; images: $here/images.py $dir"

export SAUCER_RUNS=$root/runs
rc=0
"$bin" eval "$here/../desktop.yaml" --label seat ${shard:+--shard "$shard"} -m openai:seat -c "$here/config.yaml" -o "$out" -j 1 || rc=$?
echo "run.sh: saucer eval exited $rc; results in $out"
python3 "$seat" stats "$dir"
exit $rc

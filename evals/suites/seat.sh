# seat.sh: what the seat suites' run.sh scripts share (sourced, POSIX sh):
# a saucer built once from the repository's committed HEAD, and a model
# seat (model_seat.py) serving on loopback.

# seat_build BIN: build saucer into BIN from the committed HEAD of the
# repository this file is in, unless BIN is there already (every run of a
# proof then uses the same binary; remove it to rebuild).
seat_build() {
  [ -x "$1" ] && return 0
  repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
  src=$(mktemp -d)
  echo "run.sh: building saucer from $(git -C "$repo" rev-parse --short HEAD) (committed HEAD) into $1"
  git -C "$repo" archive HEAD | tar -x -C "$src"
  (cd "$src" && go build -o "$1" ./cmd/saucer)
  rm -rf "$src"
}

# seat_start SEAT PORT DIR: serve model_seat.py (at SEAT) on PORT with its
# requests in DIR, stopped when the script ends; requests a dead seat left
# unanswered are set aside first ('next' would show them first).
seat_start() {
  [ -f "$1" ] || { echo "run.sh: no model seat at $1: set MODEL_SEAT to model_seat.py's path" >&2; exit 2; }
  for req in "$3"/req-*.json; do
    [ -e "$req" ] || continue
    n=${req##*/req-}; n=${n%.json}
    if [ ! -e "$3/resp-$n.json" ]; then
      mkdir -p "$3/abandoned"
      mv "$req" "$3/abandoned/req-$n-$(date +%s).json"
      echo "run.sh: set aside request $n, which an earlier seat never answered"
    fi
  done
  if python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $2)) != 0)"; then
    echo "run.sh: port $2 is already in use (another seat?): stop it first" >&2; exit 2
  fi
  python3 "$1" serve "$2" "$3" &
  seat_pid=$!
  trap 'kill "$seat_pid" 2>/dev/null || true' EXIT INT TERM
  i=0
  until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$2/v1/models', timeout=1)" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 50 ] || ! kill -0 "$seat_pid" 2>/dev/null; then
      echo "run.sh: the seat did not start on port $2" >&2; exit 3
    fi
    sleep 0.2
  done
  export OPENAI_BASE_URL=http://127.0.0.1:$2/v1 OPENAI_API_KEY=seat
}

#!/usr/bin/env python3
"""Writes steps.jsonl: one line per step of the long task, the command
`ls -la DIR | head -50` and its real output, for each directory named in
the file given (one a line, in step order).

    python3 make_steps.py dirs.txt > steps.jsonl

The bundled steps.jsonl was made on a Debian bookworm machine with
LC_ALL=C and TZ=UTC, from 100 system directories (/usr, /etc) whose
outputs are 0.5-3.5 KB, about as many in each 500-byte band, in a shuffled
order.
"""
import json
import os
import subprocess
import sys

env = dict(os.environ, LC_ALL="C", TZ="UTC")
for d in open(sys.argv[1]).read().split("\n"):
    if not d:
        continue
    cmd = f"ls -la {d} | head -50"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, check=True).stdout
    if not 500 <= len(out.encode()) <= 3500:
        sys.exit(f"{d}: {len(out.encode())} bytes, outside 500-3500")
    print(json.dumps({"command": cmd, "output": out}, ensure_ascii=False))

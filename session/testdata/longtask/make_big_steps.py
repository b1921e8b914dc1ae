#!/usr/bin/env python3
"""Writes big_steps.jsonl.gz: one line per step of the long task with large
results, a command and its real output (10 to 50 KB), for each command in
the file given (one a line, in step order).

    python3 make_big_steps.py commands.txt

The bundled file was made on a Debian bookworm machine with LC_ALL=C and
TZ=UTC from 60 commands that list installed files (`dpkg -L PKG`, `find
DIR | sort`, `ls -lR DIR`), about as many in each 8 KB band, shuffled.
"""
import gzip
import json
import os
import subprocess
import sys

env = dict(os.environ, LC_ALL="C", TZ="UTC")
with gzip.open("big_steps.jsonl.gz", "wt", encoding="utf-8") as out:
    for cmd in open(sys.argv[1]).read().split("\n"):
        if not cmd:
            continue
        res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, check=True).stdout
        if not 10 << 10 <= len(res.encode()) <= 50 << 10:
            sys.exit(f"{cmd}: {len(res.encode())} bytes, outside 10-50 KB")
        out.write(json.dumps({"command": cmd, "output": res}, ensure_ascii=False) + "\n")

#!/usr/bin/env python3
"""images.py DIR: write the images of the oldest request waiting in a model seat's DIR (the screenshots
Saucer sent with it) to DIR/images/req-NNNN-K.png and print their paths, so that whoever sits in the seat
can look at them; model_seat.py next shows them as "[image N chars]"."""
import base64, glob, json, os, sys

d = sys.argv[1]
waiting = [p for p in sorted(glob.glob(os.path.join(d, "req-*.json")))
           if not os.path.exists(p.replace("req-", "resp-"))]
if not waiting:
    sys.exit("no request is waiting in " + d)
req = json.load(open(waiting[0]))
n = os.path.basename(waiting[0])[4:-5]
os.makedirs(os.path.join(d, "images"), exist_ok=True)
k = 0
for m in req.get("messages", []):
    parts = m.get("content") if isinstance(m.get("content"), list) else []
    for part in parts:
        url = (part.get("image_url") or {}).get("url", "") if part.get("type") == "image_url" else ""
        if url.startswith("data:image/") and ";base64," in url:
            k += 1
            path = os.path.join(d, "images", "req-%s-%d.png" % (n, k))
            with open(path, "wb") as f:
                f.write(base64.b64decode(url.split(";base64,", 1)[1]))
            print(path)
if k == 0:
    print("request %s has no image" % n)

import sys

# The file, not the answer, decides.
try:
    text = open("greeting.txt").read()
except OSError:
    sys.exit(1)
sys.exit(0 if text.strip() == "hello agent" else 1)

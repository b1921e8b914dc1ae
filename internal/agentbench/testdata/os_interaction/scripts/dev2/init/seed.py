# A python init: bash would stop at the first line.
import random

rng = random.Random(7)
with open("numbers.txt", "w") as f:
    for _ in range(20):
        f.write(f"{rng.randint(1, 100)}\n")

import sys

# argv[1] is the agent's answer, argv[2] what the example printed: equal as
# whole numbers.
try:
    sys.exit(0 if int(sys.argv[1].strip()) == int(sys.argv[2].strip()) else 1)
except ValueError:
    sys.exit(1)

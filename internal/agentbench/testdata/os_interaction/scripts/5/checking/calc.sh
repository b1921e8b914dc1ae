#!/bin/bash
# ./calc must print each expression's value within 1e-5.
for expr in "1 + 2" "6 * (3 - 1)" "7 / 2" "(4 + 4) * 2.5" "10 - 2 * 3"; do
    want=$(python3 -c "print($expr)")
    got=$(./calc "$expr") || exit 1
    python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-5 else 1)" "$got" "$want" || exit 1
done
exit 0

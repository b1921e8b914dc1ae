
#!/bin/bash
# Starts with an empty line, as several of the benchmark's scripts do.
mkdir -p logs/a logs/b
touch logs/one.log logs/a/two.log logs/b/three.log logs/b/notes.txt

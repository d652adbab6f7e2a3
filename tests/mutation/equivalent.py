"""The mutants no test can kill, each with the reason: `make mutate` counts
them apart from the survivors. A key is (file, the line before, the line
after), as scripts/mutate.py --list prints them."""

EQUIVALENT: dict = {}

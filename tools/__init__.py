"""Maintainer tools, each run as a module from the repository root.

    python -m tools.copy_op       start your own project from this one (docs/copy_your_own_op.md)
    python -m tools.mutate        make mutate: plant one-line bugs, list the ones the tests miss
    python -m tools.ci.check_clean_tree   CI: commands must not change what git tracks

tools/ci/ also holds make sanitize's and make compute-sanitizer's scripts.
"""

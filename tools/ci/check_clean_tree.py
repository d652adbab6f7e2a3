"""Runs commands and fails if any of them changed a file git tracks.

    python -m tools.ci.check_clean_tree "make tutorial" "make test" "make bench BENCH_PARTS=ratios"

Running the project must not change it: results, builds and caches go to
ignored paths (build/, .venv/, docs/_build/, tutorial/.build-cache/). This
records `git status --porcelain` and a hash of every listed file before the
commands, runs them in order (their output passes through), and compares
after each one. On a fresh clone the status starts empty, so any line after
a command is that command's doing. Exits 1 naming the command and the paths
it touched, or with the first command's failure; 0 when the tree is as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def snapshot(root: str) -> dict[str, str]:
    """{path: status and content hash} of every path git reports as changed or new."""
    status = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state = {}
    for entry in filter(None, status.split("\0")):
        code, path = entry[:2], entry[3:]
        full = os.path.join(root, path)
        digest = ""
        if os.path.isfile(full):
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        state[path] = f"{code} {digest}"
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", nargs="+", help="shell commands, run in the repository root")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    before = snapshot(args.root)
    if before:
        print(f"note: {len(before)} path(s) already differ from HEAD; only new changes count")
    for command in args.commands:
        print(f"==> {command}", flush=True)
        start = time.monotonic()
        result = subprocess.run(command, shell=True, cwd=args.root)
        seconds = f"{time.monotonic() - start:.0f} s"
        if result.returncode != 0:
            print(f"{command!r} failed with exit status {result.returncode} after {seconds}")
            return result.returncode
        after = snapshot(args.root)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        if changed:
            print(f"{command!r} changed what git tracks (or left new files it does not ignore):")
            print("\n".join(f"  {p}" for p in changed))
            return 1
        print(f"==> {command}: passed in {seconds}; the tree is as it was", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Keeps the "What changed" diff in each checkpoint's README equal to the real diff.

    python tutorial/readme_diff.py           # rewrite the diff blocks
    python tutorial/readme_diff.py --check   # exit 1 if one is out of date (the tests do this)

The block sits between <!-- diff:begin --> and <!-- diff:end --> in
tutorial/NN_*/README.md: the unified diff of every file the step changes,
and a list of the files it adds, against the previous checkpoint.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parent
BEGIN, END = "<!-- diff:begin -->", "<!-- diff:end -->"
STAGES = ["01_define", "02_impl", "03_fake", "04_autograd", "05_mymul_backward", "06_stable_abi"]
SKIP_PARTS = {"build", "__pycache__"}


def files(checkpoint: Path) -> dict[str, bytes]:
    """Every source file of a checkpoint (no build outputs), by relative path."""
    out = {}
    for path in sorted(checkpoint.rglob("*")):
        rel = path.relative_to(checkpoint)
        if path.is_file() and not SKIP_PARTS & set(rel.parts) and not path.name.endswith(".so"):
            out[rel.as_posix()] = path.read_bytes()
    return out


def step_diff(stage: str) -> str:
    prev = STAGES[STAGES.index(stage) - 1]
    old, new = files(TUTORIAL / prev), files(TUTORIAL / stage)
    lines = []
    added = [f for f in new if f not in old]
    removed = [f for f in old if f not in new]
    for name in sorted(set(old) & set(new) - {"README.md"}):
        if old[name] != new[name]:
            lines += difflib.unified_diff(
                old[name].decode().splitlines(),
                new[name].decode().splitlines(),
                f"{prev}/{name}",
                f"{stage}/{name}",
                lineterm="",
                n=1,  # one line of context: the change, not the file around it
            )
    body = "\n".join(lines)
    text = ""
    if added:
        text += "New files: " + ", ".join(f"`{f}`" for f in added) + ".\n\n"
    if removed:
        text += "Removed files: " + ", ".join(f"`{f}`" for f in removed) + ".\n\n"
    if body:
        text += "```diff\n" + body + "\n```\n"
    return text


def block(stage: str) -> str:
    return f"{BEGIN}\n{step_diff(stage)}{END}"


def current(readme: str) -> str:
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    return readme[start:end]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for stage in STAGES[1:]:
        path = TUTORIAL / stage / "README.md"
        text = path.read_text()
        want = block(stage)
        if current(text) != want:
            stale.append(stage)
            if not args.check:
                path.write_text(text.replace(current(text), want))
    if args.check and stale:
        print("out of date:", ", ".join(stale), "(run python tutorial/readme_diff.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

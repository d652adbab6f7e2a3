"""Keeps the "What changed" diff in each checkpoint's README equal to the real diff.

    python -m tools.tutorial.readme_diff           # rewrite the diff blocks
    python -m tools.tutorial.readme_diff --check   # exit 1 if one is out of date (tests do)

The block sits between <!-- diff:begin --> and <!-- diff:end --> in
tutorial/NN_*/README.md: the unified diff of every file the step changes,
and a list of the files it adds, against the previous checkpoint. A long step
shows part of it: <!-- diff:begin show=csrc/checks.h csrc/ops.cpp:mymul_cpu -->
diffs checks.h whole and, of ops.cpp, the hunks that mention mymul_cpu (a
comma-separated list of words); every other changed file is linked below the
diff instead.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[2] / "tutorial"
END = "<!-- diff:end -->"
BEGIN = re.compile(r"<!-- diff:begin(?: show=([^>]*?))? -->")
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


def _hunks(lines: list[str], words: list[str]) -> list[str]:
    """The file header and the hunks of a unified diff that mention one of `words`."""
    head, hunks = lines[:2], []
    for line in lines[2:]:
        if line.startswith("@@"):
            hunks.append([])
        hunks[-1].append(line)
    return head + [line for h in hunks if any(w in "\n".join(h) for w in words) for line in h]


def step_diff(stage: str, show: list[str] | None = None) -> str:
    """The step's diff; with `show`, only those files (file or file:word,word)."""
    prev = STAGES[STAGES.index(stage) - 1]
    old, new = files(TUTORIAL / prev), files(TUTORIAL / stage)
    picked = dict(s.partition(":")[::2] for s in show) if show else None
    lines, hidden = [], []
    added = [f for f in new if f not in old]
    removed = [f for f in old if f not in new]
    for name in sorted(set(old) & set(new) - {"README.md"}):
        if old[name] == new[name]:
            continue
        diff = list(
            difflib.unified_diff(
                old[name].decode().splitlines(),
                new[name].decode().splitlines(),
                f"{prev}/{name}",
                f"{stage}/{name}",
                lineterm="",
                n=1,  # one line of context: the change, not the file around it
            )
        )
        if picked is not None and name not in picked:
            hidden.append(f"[`{name}`]({name})")
            continue
        if picked and picked[name]:
            diff = _hunks(diff, picked[name].split(","))
            hidden.append(f"the rest of [`{name}`]({name})")
        lines += diff
    body = "\n".join(lines)
    text = ""
    if added:
        text += "New files: " + ", ".join(f"`{f}`" for f in added) + ".\n\n"
    if removed:
        text += "Removed files: " + ", ".join(f"`{f}`" for f in removed) + ".\n\n"
    if body:
        text += "```diff\n" + body + "\n```\n"
    if hidden:
        text += (
            "\nAlso changed, as described above: "
            + ", ".join(hidden)
            + f" (`diff -ru tutorial/{prev} tutorial/{stage}` shows them all).\n"
        )
    return text


def _show(readme: str) -> list[str] | None:
    found = BEGIN.search(readme)
    return found[1].split() if found and found[1] else None


def block(stage: str) -> str:
    show = _show((TUTORIAL / stage / "README.md").read_text())
    begin = f"<!-- diff:begin show={' '.join(show)} -->" if show else "<!-- diff:begin -->"
    return f"{begin}\n{step_diff(stage, show)}{END}"


def current(readme: str) -> str:
    start, end = BEGIN.search(readme).start(), readme.index(END) + len(END)
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
        print("out of date:", ", ".join(stale), "(run python -m tools.tutorial.readme_diff)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

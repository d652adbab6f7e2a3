"""Copies this repository's op package into a new project and renames it.

    python -m tools.copy_op ../myproject --name myproject --op mymuladd=fused_scale

Copies the files a maintainer starts from (FILES below: the build, the C++
and CUDA sources, the Python package and the conformance suite) and renames,
in file contents and file names:

  extension_cpp   -> NAME   the Python package and the op namespace
                            (torch.ops.NAME, TORCH_LIBRARY(NAME, m), "NAME::op")
  EXTENSION_CPP   -> NAME in upper case (environment variables, macros)
  OLD (each --op) -> NEW    an op, and every identifier built from it
                            (mymuladd_cpu -> fused_scale_cpu, test_mymuladd -> ...)

The conformance harness keeps its name (extension_cpp_testing): the copy
requires the harness's distribution, as this package does, and its
NAME.testing re-exports it.

A name matches only as a whole word, where "_" also separates words, so
renaming mymul leaves mymuladd alone. Build outputs are not copied.
docs/copy_your_own_op.md says what to do next; tests/test_copy_op.py builds a
renamed copy and runs its conformance suite.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "extension_cpp"
HARNESS = "extension_cpp_testing"  # another distribution: never renamed
FILES = [
    "setup.py",
    "build_options.py",
    "pyproject.toml",
    ".clang-format",
    "requirements",
    "csrc",
    "extension_cpp",
    "tests/conftest.py",
    "tests/child_process.py",
    "tests/conformance",
    # What the conformance suite runs: the AOTInductor C++ runner, and the
    # wheel build of test_wheel.py; the compatibility matrix (make matrix).
    "examples/aoti_runner",
    "noxfile.py",
    # The harness's source, which the wheel tests build and install beside
    # the package's wheel. Copied as it is: it is another distribution.
    "harness",
]
KEEP_NAMES = ("harness/",)
CPP_SUFFIXES = {".cpp", ".h", ".cu", ".cuh"}
# Not copied: build outputs.
SKIP = re.compile(r"(^|/)(__pycache__|build)(/|$)|\.so$|\.pyc$|_build_info\.py$")


def word(name: str) -> re.Pattern:
    """name as a whole word; "_" and digits count as separators, letters do not."""
    return re.compile(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])")


def renamer(name: str, ops: dict[str, str]):
    package = re.compile(rf"{word(PACKAGE).pattern}(?!{re.escape(HARNESS[len(PACKAGE) :])}\b)")
    # The upper-case name also after a compiler's -D (-DEXTENSION_CPP_FAST_KERNELS).
    upper = re.compile(rf"(?:(?<![A-Za-z])|(?<=-D)){re.escape(PACKAGE.upper())}(?![A-Za-z])")
    rules = [(package, name), (upper, name.upper())]
    rules += [(word(old), new) for old, new in ops.items()]

    def rename(text: str) -> str:
        for pattern, new in rules:
            text = pattern.sub(new, text)
        return text

    return rename


def copy(dest: Path, name: str, ops: dict[str, str]) -> list[Path]:
    """Copies FILES from this repository to dest, renamed. Returns the files written."""
    rename = renamer(name, ops)
    written = []
    for entry in FILES:
        source = REPO / entry
        paths = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
        for path in paths:
            rel = path.relative_to(REPO).as_posix()
            if SKIP.search(rel):
                continue
            keep = rel.startswith(KEEP_NAMES)
            target = dest / (rel if keep else rename(rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            if keep:
                shutil.copyfile(path, target)
                written.append(target)
                continue
            try:
                target.write_text(rename(path.read_text(encoding="utf-8")), encoding="utf-8")
            except UnicodeDecodeError:  # not text: copy as is
                shutil.copyfile(path, target)
            written.append(target)
    return written


def format_cpp(files: list[Path]) -> None:
    """Reflows the renamed C++ and CUDA sources with clang-format, if it is
    installed: a longer or shorter name moves line breaks."""
    sources = [str(p) for p in files if p.suffix in CPP_SUFFIXES]
    clang_format = shutil.which(
        "clang-format", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    )
    if clang_format is None:
        print("clang-format not found: the renamed C++ sources are not reflowed")
        return
    subprocess.run([clang_format, "-i", *sources], check=True)


def parse_op(value: str) -> tuple[str, str]:
    old, sep, new = value.partition("=")
    if not sep or not old.isidentifier() or not new.isidentifier():
        raise argparse.ArgumentTypeError(f"expected OLD=NEW (two identifiers), got {value!r}")
    return old, new


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="the new project's folder (must not exist)")
    parser.add_argument("--name", required=True, help="package and op namespace, e.g. myproject")
    parser.add_argument(
        "--op", type=parse_op, action="append", default=[], help="OLD=NEW, once per op to rename"
    )
    args = parser.parse_args()
    if not args.name.isidentifier():
        parser.error(f"--name must be a Python identifier, got {args.name!r}")
    if args.dest.exists():
        parser.error(f"{args.dest} exists; pick a new folder")
    written = copy(args.dest, args.name, dict(args.op))
    format_cpp(written)
    print(f"wrote {len(written)} files to {args.dest}")
    leftover = [
        p
        for p in written
        if not p.relative_to(args.dest).as_posix().startswith(KEEP_NAMES)
        if p.suffix != ".so" and PACKAGE in p.read_text(errors="ignore").replace(HARNESS, "")
    ]
    for path in leftover:
        print(f"  still mentions {PACKAGE}: {path}")
    return 1 if leftover else 0


if __name__ == "__main__":
    sys.exit(main())

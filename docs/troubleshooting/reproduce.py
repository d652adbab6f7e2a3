"""Reproduces every error on the troubleshooting page and saves its message.

    python docs/troubleshooting/reproduce.py [--other-python PY --cpu-build DIR]

Each case runs for real, in a scratch directory, and its output is written to
docs/troubleshooting/<case>.txt, which troubleshooting.md includes. Only the
part a reader needs is kept (the command, the final exception, or the first
compiler error) and long paths are shortened to `.../site-packages/` and
`$TMP`; nothing else is edited. The two torch-mismatch cases need a second
torch release (--other-python: an interpreter with another torch installed)
and a CPU-only build of this repository made with the first
(--cpu-build: a checkout built with `EXTENSION_CPP_CUDA=0 python setup.py
build_ext --inplace`). The compile cases take a few minutes on two cores, so
this is run by hand, not by `make docs`.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _shorten(text: str, tmp: str) -> str:
    text = text.replace(tmp, "$TMP")
    return re.sub(r"/[^\s'\"]*/site-packages/", ".../site-packages/", text)


def _exception(output: str) -> str:
    """Each traceback's exception, bodies elided, chained causes kept."""
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Traceback"))
    kept = []
    for line in lines[first:]:
        if line.startswith("Traceback"):
            kept += [line, "  ..."]
        elif line and not line.startswith(" "):
            kept.append(line)  # exception text, or "The above exception was ..."
        elif not line and kept and kept[-1]:
            kept.append(line)
    return "\n".join(kept).strip()


def _first_compiler_error(output: str) -> str:
    lines = output.splitlines()
    first = next(i for i, line in enumerate(lines) if ": error:" in line)
    start = first
    while start > 0 and lines[start - 1].lstrip().startswith(("In file included", "from ")):
        start -= 1
    count = sum(": error:" in line for line in lines)
    shown = lines[start : first + 4]
    return "\n".join(shown + [f"... ({count} errors in all)"])


def _run(cmd: list[str], cwd: str, env: dict | None = None) -> str:
    result = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    assert result.returncode != 0, f"{cmd} was meant to fail, and succeeded"
    return result.stdout + result.stderr


def _save(case: str, command: str, message: str, tmp: str) -> None:
    path = os.path.join(HERE, f"{case}.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"$ {command}\n{_shorten(message, tmp)}\n")
    print(f"wrote {os.path.relpath(path)}")


def register_fake_first(tmp: str) -> None:
    out = _run([sys.executable, os.path.join(HERE, "register_fake_first.py")], cwd=tmp)
    _save("register_fake_first", "python register_fake_first.py", _exception(out), tmp)


def fake_strides(tmp: str) -> None:
    out = _run([sys.executable, os.path.join(HERE, "fake_strides.py")], cwd=tmp)
    _save("fake_strides", "python fake_strides.py", _exception(out), tmp)


def limited_api(tmp: str) -> None:
    src = shutil.copytree(os.path.join(HERE, "limited_api"), os.path.join(tmp, "limited_api"))
    out = _run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src)
    _save("limited_api", "python setup.py build_ext", _first_compiler_error(out), tmp)


def cuda_mismatch(tmp: str) -> None:
    src = shutil.copytree(os.path.join(HERE, "cuda_mismatch"), os.path.join(tmp, "cuda_mismatch"))
    toolkit = os.path.join(tmp, "cuda-12.8")
    os.makedirs(os.path.join(toolkit, "bin"))
    shutil.move(os.path.join(src, "nvcc"), os.path.join(toolkit, "bin", "nvcc"))
    out = _run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=src,
        env={"CUDA_HOME": toolkit},
    )
    _save(
        "cuda_mismatch",
        "CUDA_HOME=$TMP/cuda-12.8 python setup.py build_ext",
        _exception(out),
        tmp,
    )


def torch_mismatch(tmp: str, other_python: str, cpu_build: str) -> None:
    so = os.path.join(cpu_build, "extension_cpp", "_C.abi3.so")
    version = subprocess.run(
        [other_python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    out = _run([other_python, "-c", f"import torch; torch.ops.load_library({so!r})"], cwd=tmp)
    _save(
        "undefined_symbol",
        f"python -c 'import torch; torch.ops.load_library(\"extension_cpp/_C.abi3.so\")'"
        f"  # torch {version}",
        _exception(out).replace(cpu_build, "$BUILD"),
        tmp,
    )
    out = _run([other_python, "-c", "import extension_cpp"], cwd=tmp, env={"PYTHONPATH": cpu_build})
    _save(
        "loader_mismatch",
        f"python -c 'import extension_cpp'  # torch {version}",
        _exception(out).replace(cpu_build, "$BUILD"),
        tmp,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other-python", help="an interpreter with another torch release")
    parser.add_argument("--cpu-build", help="a CPU-only in-place build of this repository")
    parser.add_argument("cases", nargs="*", help="run only these cases")
    args = parser.parse_args()
    cases = {
        "register_fake_first": register_fake_first,
        "fake_strides": fake_strides,
        "limited_api": limited_api,
        "cuda_mismatch": cuda_mismatch,
    }
    if args.other_python and args.cpu_build:
        cases["torch_mismatch"] = lambda tmp: torch_mismatch(
            tmp, args.other_python, os.path.abspath(args.cpu_build)
        )
    for name, case in cases.items():
        if args.cases and name not in args.cases:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            case(tmp)


if __name__ == "__main__":
    main()

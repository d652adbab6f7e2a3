"""Why streaming an integer crashed extensions on our GPU machine: a probe.

    python scripts/ostream_probe.py [--out DIR]

On our GPU machine (torch 2.11.0+cu130, g++ 13.3), every extension built
with torch.utils.cpp_extension crashed on its first `std::ostringstream <<
int`, which is how TORCH_CHECK formats a message. This script builds one
small op library (an op that streams an int64_t, and one whose TORCH_CHECK
does) with cpp_extension.load, in three ways, and reports for each:

* whether the library carries its own copy of the C++ runtime: the toolchain
  links libstdc++ statically when it has no libstdc++.so to link against
  (`g++ -print-file-name=libstdc++.so` then prints a bare file name), and the
  copy's symbols are exported unless the link hides them;
* where the library's std:: symbols come from at run time (LD_DEBUG=bindings):
  its own copy, or the libstdc++.so.6 that torch loaded;
* the result of calling both ops in a fresh process, with a native backtrace
  if it crashes.

The three ways: cpp_extension's link line as it is; the same library run
with the system libstdc++.so.6 preloaded (LD_PRELOAD); and the link line
with `-Wl,--exclude-libs,ALL`, which keeps a static copy's symbols private
(what setup.py does). On a machine whose toolchain links libstdc++.so, all
three work and the library carries no copy.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import torch
import torch.utils.cpp_extension as cpp_extension

# The op streams an int64_t into a std::ostringstream (what c10::str, and so
# TORCH_CHECK, does) and returns the text. A SIGSEGV handler prints the native
# stack, which Python's faulthandler cannot show.
SOURCE = textwrap.dedent(
    """
    #include <execinfo.h>
    #include <signal.h>
    #include <unistd.h>

    #include <torch/library.h>

    #include <sstream>
    #include <string>

    namespace {

    void on_segv(int) {
      void* frames[32];
      const int n = backtrace(frames, 32);
      backtrace_symbols_fd(frames, n, 2);
      _exit(139);
    }

    const bool installed = [] {
      signal(SIGSEGV, on_segv);
      return true;
    }();

    std::string streamed(int64_t n) {
      std::ostringstream ss;
      ss << "n=" << n;
      return ss.str();
    }

    void checked(int64_t n) { TORCH_CHECK(n < 0, "expected a negative n, got ", n); }

    }  // namespace

    TORCH_LIBRARY(NAME, m) {
      m.def("streamed(int n) -> str", &streamed);
      m.def("checked(int n) -> ()", &checked);
    }
    """
)

# name -> (extra_ldflags, extra environment when the op is called)
PRELOAD = {"LD_PRELOAD": "libstdc++.so.6"}  # filled in with g++'s own copy in main()
VARIANTS = {
    "default": ([], {}),  # cpp_extension's link line as it is
    "default+preload": ([], PRELOAD),  # the same library, the C++ runtime preloaded
    "exclude_libs": (["-Wl,--exclude-libs,ALL"], {}),  # a static copy kept private
}

# Functions only libstdc++ itself defines (explicit instantiations and
# locale internals): a library that defines them has a copy of the runtime.
RUNTIME_ONLY = ("_ZNSo9_M_insertIlEERSoT_", "_ZNSt6locale7classicEv", "_ZNSt8ios_base4InitC1Ev")

CALL = """
import sys, torch
torch.ops.load_library(sys.argv[1])
ns = getattr(torch.ops, sys.argv[2])
print("streamed(5) ->", repr(ns.streamed(5)), flush=True)
try:
    ns.checked(5)
except RuntimeError as e:
    print("checked(5) raised RuntimeError:", str(e).splitlines()[0], flush=True)
"""


def needed(so: str) -> list:
    out = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)


def build(variant: str, flags: list, root: str) -> str:
    name = f"ostream_probe_{variant}"
    src = os.path.join(root, f"{name}.cpp")
    with open(src, "w") as f:
        f.write(SOURCE.replace("NAME", name))
    build_dir = os.path.join(root, name)
    os.makedirs(build_dir, exist_ok=True)
    cpp_extension.load(
        name=name,
        sources=[src],
        extra_ldflags=list(flags),
        build_directory=build_dir,
        is_python_module=False,
        verbose=False,
    )
    return os.path.join(build_dir, f"{name}.so")


def runtime_copy(so: str) -> str:
    """Whether `so` contains a copy of libstdc++, and whether it exports it."""
    syms = subprocess.run(["nm", "--defined-only", so], capture_output=True, text=True).stdout
    dyn = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True).stdout
    has = [name for name in RUNTIME_ONLY if name in syms]
    exported = [name for name in RUNTIME_ONLY if name in dyn]
    if not has:
        return "carries no copy of libstdc++"
    return f"carries a copy of libstdc++ ({len(has)} of {len(RUNTIME_ONLY)} probes), " + (
        f"exports {len(exported)} of them" if exported else "keeps it private"
    )


def std_bindings(so: str, name: str, extra_env: dict) -> list:
    """Where the probe library's std:: symbols come from, other than itself: a
    count per library, and the stream and locale functions among them."""
    env = dict(os.environ, LD_DEBUG="bindings", **extra_env)
    run = subprocess.run(
        [sys.executable, "-c", CALL, so, name], capture_output=True, text=True, env=env
    )
    base = os.path.basename(so)
    found = {}  # library -> mangled names
    for line in run.stderr.splitlines():
        m = re.search(r"binding file (\S+) \[0\] to (\S+) \[0\]: normal symbol `([^']+)'", line)
        if m and os.path.basename(m.group(1)) == base:
            target = os.path.basename(m.group(2))
            if target != base:
                found.setdefault(target, set()).add(m.group(3))
    rows = []
    for target, mangled in sorted(found.items()):
        names = subprocess.run(
            ["c++filt"], input="\n".join(sorted(mangled)), capture_output=True, text=True
        ).stdout.splitlines()
        std = [n for n in names if n.startswith("std::")]
        if not std:
            continue
        rows.append(f"{target}: {len(std)} std:: symbols, of which streams and locales:")
        rows += [f"    {n}" for n in std if re.search(r"stream|locale|ios_base|num_put", n)]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", default=None, help="also write the report to DIR/ostream_probe.txt"
    )
    args = parser.parse_args()
    lines = [f"torch {torch.__version__}, {sys.executable}"]
    # cpp_extension and setuptools compile and link with $CXX when it is set.
    cxx = os.environ.get("CXX", "c++")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    lines.append(f"CXX={cxx}: " + (version.splitlines()[0] if version else "not found"))
    for name in ("libstdc++.so", "libstdc++.a"):
        found = subprocess.run(
            [cxx, f"-print-file-name={name}"], capture_output=True, text=True
        ).stdout.strip()
        lines.append(f"{cxx} -print-file-name={name}: {found}")
    with tempfile.TemporaryDirectory() as root:
        # The shared runtime torch itself loads (the system's).
        PRELOAD["LD_PRELOAD"] = subprocess.run(
            ["g++", "-print-file-name=libstdc++.so.6"], capture_output=True, text=True
        ).stdout.strip()
        built = {}
        for variant, (flags, env) in VARIANTS.items():
            key = tuple(flags)
            if key not in built:
                print(f"building with extra_ldflags={flags} ...", flush=True)
                try:
                    built[key] = (build(variant, flags, root), f"ostream_probe_{variant}")
                except Exception as e:  # a link line this toolchain refuses
                    lines.append(f"\n== variant {variant}: build failed: {str(e)[-300:]}")
                    continue
            so, name = built[key]
            lines.append(f"\n== variant {variant}: extra_ldflags={flags} env={env}")
            lines.append("NEEDED: " + ", ".join(needed(so)))
            lines.append(runtime_copy(so))
            lines.append(
                "std:: symbols the probe library binds, by the library that supplies them:"
            )
            lines += ["    " + r for r in std_bindings(so, name, env)] or ["    none"]
            run = subprocess.run(
                [sys.executable, "-c", CALL, so, name],
                capture_output=True,
                text=True,
                env=dict(os.environ, **env),
            )
            lines.append(f"call: exit code {run.returncode}")
            lines += ["    " + x for x in (run.stdout + run.stderr).strip().splitlines()[:8]]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(os.path.join(args.out, "ostream_probe.txt"), "w") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

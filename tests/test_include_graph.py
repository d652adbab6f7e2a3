"""csrc/'s include graph: the simple kernels and the tuned ones are separate.

The plain loops (csrc/cpu/, csrc/cuda/) are the code people read and copy,
and csrc/fast/ holds the tuned loops beside them; one dispatch point above
both (csrc/loops.h, csrc/loops.cuh) picks between them. So neither side
names the other, what both need lives beneath them (csrc/runtime.h,
csrc/runtime.cuh, csrc/elementwise.h), the dispatch point names csrc/fast/
only where the build has the fast kernels (EXTENSION_CPP_KERNELS=simple
builds without that folder), and no file includes itself through others.
This reads the ``#include "..."`` lines, whatever preprocessor branch they
sit in; each rule is also run on a planted violation, so none passes by
reading nothing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parent.parent / "csrc"
SOURCES = (".h", ".cpp", ".cu", ".cuh")
SIMPLE = ("cpu/", "cuda/")
FAST = ("fast/",)
FAST_MACRO = "EXTENSION_CPP_FAST_KERNELS"
DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*$")


def includes(path: Path) -> list[tuple[str, list[str]]]:
    """Each quoted include of a file, with the conditions of the #if blocks
    around it (a condition after #else reads "!(...)")."""
    found, stack = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = DIRECTIVE.match(line)
        if match is None:
            continue
        word, rest = match.groups()
        if word in ("if", "ifdef", "ifndef"):
            stack.append(rest if word != "ifndef" else f"!defined({rest})")
        elif word in ("else", "elif"):
            stack[-1] = f"!({stack[-1]})" if word == "else" else rest
        elif word == "endif":
            stack.pop()
        elif word == "include" and rest.startswith('"'):
            found.append((rest.split('"')[1], list(stack)))
    return found


def include_graph(root: Path) -> dict[str, dict[str, list[list[str]]]]:
    """file -> {included file -> the conditions around each of its includes},
    paths relative to root. Every quoted include must be a file under root, so
    that none escapes the graph."""
    graph = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCES):
        edges = {}
        for name, conditions in includes(path):
            target = (path.parent / name).resolve()
            if not target.is_file() or root.resolve() not in target.parents:
                raise ValueError(
                    f"{path.relative_to(root)}: #include {name!r} is not a file under {root}"
                )
            edges.setdefault(target.relative_to(root.resolve()).as_posix(), []).append(conditions)
        graph[path.relative_to(root).as_posix()] = edges
    return graph


def crossing_edges(graph) -> list[str]:
    """Includes between the simple kernels' folders and csrc/fast/, either way."""
    return [
        f"{src} -> {dst}"
        for src, edges in graph.items()
        for dst in edges
        if (src.startswith(SIMPLE) and dst.startswith(FAST))
        or (src.startswith(FAST) and dst.startswith(SIMPLE))
    ]


def unguarded_fast_includes(graph) -> list[str]:
    """Includes of csrc/fast/ from outside it that a simple build would compile."""
    return [
        f"{src} -> {dst}"
        for src, edges in graph.items()
        for dst, occurrences in edges.items()
        if dst.startswith(FAST)
        and not src.startswith(FAST)
        and any(FAST_MACRO not in conditions for conditions in occurrences)
    ]


def cycles(graph) -> list[list[str]]:
    """One include path that comes back to its start, per cycle found."""
    found, state = [], {}  # state: 1 while on the path, 2 when done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_simple_and_fast_kernels_never_include_each_other():
    assert crossing_edges(include_graph(CSRC)) == []


def test_fast_kernels_are_included_only_in_a_fast_build():
    assert unguarded_fast_includes(include_graph(CSRC)) == []


def test_no_include_cycle():
    assert cycles(include_graph(CSRC)) == []


def test_the_graph_has_the_files_and_edges_the_rules_are_about():
    graph = include_graph(CSRC)
    assert "../loops.h" not in graph  # paths are relative to csrc/
    assert "fast/cpu/elementwise.h" in graph["loops.h"]
    assert "fast/cuda/elementwise.cuh" in graph["loops.cuh"]
    assert "cpu/elementwise_cpu.h" in graph["loops.h"]
    assert "runtime.h" in graph["fast/cpu/tiles.h"]


# Each rule on a copy of csrc/ with one planted violation.
PLANTS = {
    "simple includes fast": (
        "cpu/elementwise_cpu.h",
        '#include "../fast/layout.h"',
        crossing_edges,
    ),
    "fast includes simple": (
        "fast/layout.h",
        '#include "../cuda/elementwise_cuda.cuh"',
        crossing_edges,
    ),
    "fast included unguarded": ("loops.h", '#include "fast/layout.h"', unguarded_fast_includes),
    "cycle": ("runtime.h", '#include "cpu/elementwise_cpu.h"', cycles),
}


def planted(tmp_path, file: str, line: str) -> Path:
    """A copy of csrc/ with `line` added at the top of `file`."""
    root = tmp_path / "csrc"
    shutil.copytree(CSRC, root)
    path = root / file
    path.write_text(f"{line}\n{path.read_text(encoding='utf-8')}", encoding="utf-8")
    return root


@pytest.mark.parametrize("plant", PLANTS)
def test_each_rule_catches_a_planted_violation(plant, tmp_path):
    file, line, rule = PLANTS[plant]
    assert rule(include_graph(planted(tmp_path, file, line))) != []


def test_an_include_from_outside_csrc_is_an_error(tmp_path):
    root = planted(tmp_path, "cpu/elementwise_cpu.h", '#include "../../setup.py"')
    with pytest.raises(ValueError, match="is not a file under"):
        include_graph(root)

"""The repository's Python import graph has no cycle.

Each module of the packages and tools below is a node; `import a.b` and
`from a import b` (relative ones resolved) are edges to the modules of the
same set they name. A cycle means two modules can only be read (and
imported) together; the test names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# (folder holding top-level modules, the top-level names under it that count)
ROOTS = [
    (REPO, ["extension_cpp", "tools", "benchmarks", "docs", "tutorial", "noxfile.py"]),
    (REPO, ["setup.py", "build_options.py"]),
    (REPO / "stable", ["extension_cpp_stable"]),
    (REPO / "harness", ["extension_cpp_testing"]),
    (REPO / "tutorial" / "appendix" / "triton", ["extension_triton"]),
]


def modules(roots) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the roots."""
    found = {}
    for base, names in roots:
        for name in names:
            path = base / name
            files = [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
            for f in files:
                # Build outputs and hidden folders (tutorial/.build-cache holds a
                # whole venv) are not the repository's modules.
                folders = f.relative_to(base).parts[:-1]
                if any(p == "build" or p.startswith(".") for p in folders):
                    continue
                parts = list(f.relative_to(base).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = f
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # Imports under `if TYPE_CHECKING:` are for the type checker, never run.
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            # import a.b runs a, then a.b
            for alias in node.names:
                parts = alias.name.split(".")
                targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a import b` names the module a.b if there is one, else a
            # (a compiled module such as a._C is not a node).
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    # A package's __init__ runs before its modules, so a module naming its own
    # package (`from . import x`, x not a module here) adds no edge.
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return {t for t in targets if t in known and t != name and t not in ancestors}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def graph_of(roots) -> dict[str, set[str]]:
    known = modules(roots)
    return {name: imports(name, path, known) for name, path in known.items()}


def test_the_import_graph_has_no_cycle():
    graph = graph_of(ROOTS)
    assert len(graph) > 40, sorted(graph)  # the walk found the packages
    assert "benchmarks.ops" in graph["benchmarks.layouts"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_planted_cycle_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("import pkg.c\n")
    (pkg / "c.py").write_text("from pkg.a import thing\n")
    (pkg / "d.py").write_text("from .a import thing\nif TYPE_CHECKING:\n    from . import e\n")
    (pkg / "e.py").write_text("from . import d\n")
    graph = graph_of([(tmp_path, ["pkg"])])
    assert graph["pkg.d"] == {"pkg.a"}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]

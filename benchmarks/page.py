"""The results page of one kind of machine, assembled from the parts' tables.

`python -m benchmarks` writes each part's Markdown and stamp to
build/bench/<kind>/; this folds them into <kind>.md: a headline from the
layout sweep, then each part's tables, compacted.
"""

from __future__ import annotations

import json
import os
import re

from tools.docs.render_results import stamp_line, value_range

from .ops import OPS

PARTS = ("layouts", "ratios", "stable", "bandwidth")
# Each part's section on the page, in this order.
TITLES = {
    "layouts": "Every layout",
    "ratios": "Whole calls, by size",
    "stable": "Stable ABI against classic",
    "bandwidth": "Bandwidth",
}


def kind_title(kind_name: str) -> str:
    """cpu-2cores -> 2-core CPU; cuda -> GPU."""
    cores = re.fullmatch(r"cpu-(\d+)cores", kind_name)
    return f"{cores[1]}-core CPU" if cores else "GPU"


# A row of layouts.py's table: | dtype | layout | us | op cell x3 | A/A |,
# each op cell "**best** (eager / compile[, f copy])".
_ROW = re.compile(r"^\| (\w+) \| ([^|]+?) \| [\d.]+ \| (.+) \| ([\d.]+) \|$")
_CELL = re.compile(r"\*\*([\d.]+)\*\*(?: \(([^)]*)\))?")
_SECTION = re.compile(r"^## Layouts: (.+)$")


def layout_cells(markdown: str) -> dict[str, list[tuple]]:
    """{section: [(best ratio, op, dtype, layout, A/A, fraction of copy or None)]}."""
    sections: dict[str, list[tuple]] = {}
    current = None
    for line in markdown.splitlines():
        if m := _SECTION.match(line):
            # A sweep run in parts names them: "cpu, 1 thread, 2^20 elements (float32)".
            current = sections.setdefault(re.sub(r" \(.*\)$", "", m.group(1)), [])
        elif current is not None and (m := _ROW.match(line)):
            dtype, layout, cells, aa = m.groups()
            for op, cell in zip(OPS, cells.split(" | ")):
                best, detail = _CELL.match(cell).groups()
                copy = re.search(r"([\d.]+) copy", detail or "")
                current.append(
                    (float(best), op, dtype, layout, float(aa), float(copy[1]) if copy else None)
                )
    return sections


def headline(markdown: str) -> list[str]:
    """The layout sweep in one table: for each thread count (or the GPU), how
    many cells are ties or wins, the lowest and highest, and the A/A spread."""
    sections = layout_cells(markdown)
    if not sections:
        return []
    any_copy = any(c[5] is not None for cells in sections.values() for c in cells)
    lines = [
        "| run | cells at 1.0 or more | lowest | highest | A/A |"
        + (" of copy |" if any_copy else ""),
        "| --- | --- | --- | --- | --- |" + (" --- |" if any_copy else ""),
    ]
    for name, cells in sections.items():
        low, high = min(cells), max(cells)
        at_least = sum(round(c[0], 2) >= 1.0 for c in cells)
        aa = [c[4] for c in cells]
        row = (
            f"| {name} | {at_least} of {len(cells)} | {low[0]:.2f} ({low[1]}, {low[2]}, "
            f"{low[3]}) | {high[0]:.2f} ({high[1]}, {high[2]}, {high[3]}) | "
            f"{value_range(aa)} |"
        )
        if any_copy:
            copies = [c[5] for c in cells if c[5] is not None]
            row += f" {value_range(copies)} |" if copies else " |"
        lines.append(row)
    return lines


def compact_layouts(markdown: str) -> list[str]:
    """layouts.py's tables, one row per layout: each dtype's three ops
    against the fastest PyTorch implementation, and the A/A control. On CUDA a
    second table gives mymul's bandwidth as a fraction of a device copy's."""
    lines = []
    for name, cells in layout_cells(markdown).items():
        dtypes = list(dict.fromkeys(c[2] for c in cells))
        layouts = list(dict.fromkeys(c[3] for c in cells))
        best = {(c[2], c[3], c[1]): c[0] for c in cells}
        aa = {(c[2], c[3]): c[4] for c in cells}
        lines += [
            f"### {name}",
            "",
            "Each cell: `mymuladd` / `mymul` / `myadd_out`, the fastest PyTorch "
            "implementation's time over ours; A/A: `torch.mul` against itself, over the dtypes.",
            "",
            "| layout | " + " | ".join(dtypes) + " | A/A |",
            "| --- |" + " --- |" * (len(dtypes) + 1),
        ]
        for layout in layouts:
            row = [
                " / ".join(f"{best[(d, layout, op)]:.2f}" for op in OPS if (d, layout, op) in best)
                for d in dtypes
            ]
            spread = [aa[(d, layout)] for d in dtypes if (d, layout) in aa]
            lines.append(f"| {layout} | " + " | ".join(row) + f" | {value_range(spread)} |")
        lines.append("")
        copies = {(c[2], c[3]): c[5] for c in cells if c[1] == "mymul" and c[5] is not None}
        if copies:
            lines += [
                "`mymul`'s bandwidth as a fraction of a device copy's, counting the bytes "
                "the layout must move:",
                "",
                "| layout | " + " | ".join(dtypes) + " |",
                "| --- |" + " --- |" * len(dtypes),
            ]
            for layout in layouts:
                row = [
                    f"{copies[(d, layout)]:.2f}" if (d, layout) in copies else "" for d in dtypes
                ]
                lines.append(f"| {layout} | " + " | ".join(row) + " |")
            lines.append("")
    return lines


# A row of ratios.py's whole-call table: | dtype | 2^N | us | three op cells | A/A |,
# each op cell "ratio" or "ratio (ratio through torch.ops.aten)".
_CALL_ROW = re.compile(r"^\| (\w+) \| 2\^(\d+) \| [\d.]+ \| (.+) \| ([\d.]+) \|$")


def compact_ratios(markdown: str) -> list[str]:
    """ratios.py's tables with its whole-call sweeps folded to one row per
    size: each dtype's three ops against the native op, and the A/A spread.
    The one-element table and the verdicts stay as they are."""
    out, rows, title = [], {}, None

    def flush() -> None:
        if not rows:
            return
        dtypes = list(dict.fromkeys(d for d, _ in rows))
        sizes = sorted({n for _, n in rows}, key=int)
        out.extend(
            [
                "Each cell: `mymuladd` / `mymul` / `myadd_out`, the native op's time "
                "(`torch.addcmul`, `torch.mul`, `torch.add(out=)`) over ours; A/A: "
                "`torch.mul` against itself, over the dtypes.",
                "",
                "| N | " + " | ".join(dtypes) + " | A/A |",
                "| --- |" + " --- |" * (len(dtypes) + 1),
            ]
        )
        for n in sizes:
            cells = [rows[(d, n)][0] if (d, n) in rows else "" for d in dtypes]
            spread = [rows[(d, n)][1] for d in dtypes if (d, n) in rows]
            out.append(f"| 2^{n} | " + " | ".join(cells) + f" | {value_range(spread)} |")
        out.append("")
        rows.clear()

    for line in markdown.splitlines():
        m = _CALL_ROW.match(line)
        if m:
            dtype, n, cells, aa = m.groups()
            ratios = [c.split(" ")[0] for c in cells.split(" | ")]
            rows[(dtype, n)] = (" / ".join(ratios), float(aa))
            continue
        if line.startswith("## ") or line.startswith("Target "):
            flush()
        if rows or (title and (line.startswith("Batches of calls") or line.startswith("|"))):
            continue  # the sweep's own legend and header, replaced above
        if line.startswith("## Whole call"):
            title = line
        elif line.strip():
            title = None
        out.append(line)
    flush()
    return _body("\n".join(out))


def _body(markdown: str) -> list[str]:
    """A part's tables without its own title line."""
    lines = markdown.strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    # Its sections become subsections of the part's.
    return [("#" + line if line.startswith("## ") else line) for line in lines]


def page(kind_name: str, parts: dict[str, tuple[str, dict]]) -> str:
    """The results page of one kind of machine from its parts' (markdown, stamp)."""
    first = next(iter(parts.values()))[1]
    lines = [
        f"# Results: {kind_title(kind_name)}",
        "",
        f"`make bench` on a {kind_title(kind_name)} (`{kind_name}`; here "
        f"{first['machine']}), part by part, each with its machine, command and "
        "commit. A ratio is PyTorch's time over ours, measured interleaved (above "
        "1.0 ours is faster; inside the A/A spread, a tie); microseconds give the scale.",
        "",
    ]
    if "layouts" in parts:
        lines += [
            "## Headline",
            "",
            "Each op against the fastest PyTorch implementation of the same "
            "expression (eager, `torch.addcmul` or `torch.compile`), over every layout "
            "and dtype of the layout sweep:",
            "",
            *headline(parts["layouts"][0]),
            "",
        ]
    for part in PARTS:
        if part not in parts:
            continue
        markdown, record = parts[part]
        lines += [
            f"## {TITLES[part]}",
            "",
            f"{stamp_line(record)}; {record['machine']}, torch {record['torch']}.",
            "",
            *(
                compact_layouts(markdown)
                if part == "layouts"
                else compact_ratios(markdown)
                if part == "ratios"
                else _body(markdown)
            ),
            "",
        ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def assemble(kind_name: str, raw: str, out: str) -> str:
    parts = {}
    for part in PARTS:
        md, record = os.path.join(raw, f"{part}.md"), os.path.join(raw, f"{part}.json")
        if os.path.exists(md) and os.path.exists(record):
            with open(md, encoding="utf-8") as f, open(record, encoding="utf-8") as g:
                parts[part] = (f.read(), json.load(g))
    if not parts:
        raise SystemExit(f"no results in {raw}: run `make bench` first")
    # One machine per page: the newest part's. A part kept from a run on
    # another machine of the same kind is left out until it is rerun here.
    newest = max(parts.values(), key=lambda p: p[1].get("date", ""))[1]["machine"]
    for part, (_, record) in list(parts.items()):
        if record["machine"] != newest:
            print(f"left out of the page: {part}, which ran on {record['machine']}, not {newest}")
            del parts[part]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{kind_name}.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page(kind_name, parts))
    return path

"""The results page `make bench` writes (benchmarks/page.py), from a layout sweep's tables.

The page's headline is computed from the tables benchmarks/layouts.py
prints, so these tests feed it such a table and check what a reader sees:
the counts, the lowest and highest cells, the A/A spread, and each part's
stamp. They need no benchmark run.
"""

import json
from pathlib import Path

import pytest

from benchmarks import page as bench

# A table as benchmarks/layouts.py prints it (long lines, as in its output).
LAYOUTS = """# Layout sweep: Some CPU, 2 cores, torch 2.14.1, 2026-01-02

## Layouts: cpu, 1 thread, 2^20 elements

Each op cell: the fastest PyTorch time (eager, addcmul or compile) over ours.

| dtype | layout | ours us (mymul) | mymuladd | mymul | myadd_out | A/A |
|---|---|---|---|---|---|---|
| float32 | contiguous | 424.4 | **1.00** (2.45 / 1.27) | **0.97** (0.97 / 1.22) | **1.02** (1.02) | 0.99 |
| float32 | one transposed | 649.6 | **1.43** (11.99 / 1.43) | **1.36** (11.11 / 1.36) | **10.38** (10.38) | 1.03 |

Cells below 1.0 against the fastest PyTorch implementation: 1 of 6.

## Layouts: cuda, 2^24 elements (float32)

| dtype | layout | ours us (mymul) | mymuladd | mymul | myadd_out | A/A |
|---|---|---|---|---|---|---|
| float32 | contiguous | 70.4 | **1.10** (1.69 / 1.26, 1.02 copy) | **1.00** (1.00 / 1.05, 0.98 copy) | **1.00** (1.00, 1.02 copy) | 1.00 |
"""  # noqa: E501

STAMP = {
    "command": "python -m benchmarks.layouts --threads 1,2",
    "commit": "abc1234567",
    "date": "2026-01-02 03:04 UTC",
    "machine": "Some CPU, 2 cores",
    "torch": "2.14.1",
}


def test_cells_are_read_from_the_table():
    cells = bench.layout_cells(LAYOUTS)
    assert list(cells) == ["cpu, 1 thread, 2^20 elements", "cuda, 2^24 elements"]
    assert cells["cpu, 1 thread, 2^20 elements"][1] == (
        0.97,
        "mymul",
        "float32",
        "contiguous",
        0.99,
        None,
    )
    assert cells["cuda, 2^24 elements"][1][5] == 0.98  # fraction of a device copy


def test_headline_counts_lowest_highest_and_spread():
    rows = bench.headline(LAYOUTS)
    assert rows[2] == (
        "| cpu, 1 thread, 2^20 elements | 5 of 6 | 0.97 (mymul, float32, contiguous) | "
        "10.38 (myadd_out, float32, one transposed) | 0.99-1.03 | |"
    )
    assert rows[3].endswith("| 1.00 | 0.98-1.02 |")


def test_page_is_stamped_and_headline_first(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "layouts.md").write_text(LAYOUTS)
    (raw / "layouts.json").write_text(json.dumps(STAMP))
    (raw / "ratios.md").write_text("# Interleaved ratios\n\n## One element\n\n| a | b |\n")
    (raw / "ratios.json").write_text(json.dumps(STAMP | {"command": "python -m benchmarks.x"}))
    path = bench.assemble("cpu-2cores", str(raw), str(tmp_path / "out"))
    page = Path(path).read_text()
    assert path.endswith("out/cpu-2cores.md")
    assert page.startswith("# Results: 2-core CPU\n")
    assert "(`cpu-2cores`; here Some CPU, 2 cores)" in page
    assert page.index("## Headline") < page.index("## Every layout") < page.index("## Whole calls")
    assert "`python -m benchmarks.layouts --threads 1,2` at commit `abc1234567`" in page
    assert "`python -m benchmarks.x` at commit `abc1234567`" in page
    assert "### One element" in page  # a part's sections nest under its own
    assert "| one transposed | 1.43 / 1.36 / 10.38 | 1.03 |" in page


RATIOS = """# Interleaved ratios: Some CPU, 2 cores, torch 2.14.1, 2026-01-02

## Whole call against the native op: cpu, 1 thread

Batches of calls then one synchronisation, interleaved. Each cell is native time / our time.

| dtype | N | `torch.mul` us | mymuladd | mymul | myadd_out | A/A |
|---|---|---|---|---|---|---|
| float32 | 2^0 | 1.15 | 0.72 (1.17) | 0.72 (1.23) | 0.87 (1.66) | 1.00 |
| float32 | 2^16 | 9.63 | 0.93 (1.04) | 0.92 (1.03) | 0.95 (1.12) | 1.02 |
| bfloat16 | 2^16 | 15.31 | 1.51 (1.58) | 1.32 (1.38) | 1.53 (1.69) | 0.97 |

Target >= 1.0 for N >= 2^16: MISS. Worst ratio 0.92.
"""


def test_whole_call_tables_fold_to_one_row_per_size():
    lines = bench.compact_ratios(RATIOS)
    assert "| N | float32 | bfloat16 | A/A |" in lines
    assert "| 2^0 | 0.72 / 0.72 / 0.87 |  | 1.00 |" in lines
    assert "| 2^16 | 0.93 / 0.92 / 0.95 | 1.51 / 1.32 / 1.53 | 0.97-1.02 |" in lines
    assert "### Whole call against the native op: cpu, 1 thread" in lines
    assert not any(line.startswith("| float32") for line in lines)  # the long rows are gone
    assert lines[-1].startswith("Target >= 1.0")  # the verdict stays, after the table


def test_no_results_is_an_error(tmp_path):
    with pytest.raises(SystemExit, match="make bench"):
        bench.assemble("cpu-2cores", str(tmp_path), str(tmp_path / "out"))


def test_page_keeps_one_machine(tmp_path, capsys):
    """A part last run on another machine of the same kind is left out, named."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "layouts.md").write_text(LAYOUTS)
    (raw / "layouts.json").write_text(json.dumps(STAMP | {"date": "2026-01-03 00:00 UTC"}))
    (raw / "ratios.md").write_text(RATIOS)
    other = {"date": "2026-01-02 00:00 UTC", "machine": "Other CPU, 2 cores"}
    (raw / "ratios.json").write_text(json.dumps(STAMP | other))
    page = Path(bench.assemble("cpu-2cores", str(raw), str(tmp_path / "out"))).read_text()
    assert "## Every layout" in page
    assert "## Whole calls" not in page
    assert "Other CPU" not in page
    assert (
        "left out of the page: ratios, which ran on Other CPU, 2 cores" in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("controls", "kept", "tries"),
    [
        ([1.01], 1.01, 1),  # in the band: measured once
        ([0.80, 1.20, 0.97], 0.97, 3),  # measured again until the control is in the band
        ([0.80, 1.30, 0.90, 1.12, 0.85], 0.90, 5),  # never in it: the try nearest 1.0
    ],
)
def test_a_row_whose_control_strays_is_measured_again(monkeypatch, controls, kept, tries):
    """A layout row's A/A control outside 0.95-1.05 means the machine
    disturbed some candidates' batches and not others: the sweep measures
    the row again, up to four more times, and keeps the try nearest 1.0."""
    from benchmarks import layouts

    given = iter(controls)
    monkeypatch.setattr(
        layouts,
        "measure",
        lambda fns, **kw: {("control", "eager"): next(given), ("mymul", "eager"): 1.0},
    )
    t, made = layouts.measure_row({}, rounds=3, calls=1, sync=None)
    assert (layouts.control(t), made) == (kept, tries)


@pytest.mark.parametrize(("warm", "calls"), [(False, 3 + 4 * (1 + 3)), (True, 1 + 1 + 1)])
def test_a_warm_run_calls_each_case_once_a_round(monkeypatch, warm, calls):
    """EXTENSION_CPP_BENCH_WARM=1 (make gpu's cache-filling run) makes every
    measurement one round of one call, so that it costs what compiling
    costs; otherwise each case has its warm-up calls, then an untimed call
    and a batch a round."""
    from benchmarks import ratios

    monkeypatch.setattr(ratios, "WARM", warm)
    made = []
    times = ratios.measure({"a": lambda: made.append(1)}, rounds=4, calls=3)
    assert (len(made), list(times)) == (calls, ["a"])

"""make tutorial's workers (pytest-xdist, --dist loadgroup) run an
xdist_group's tests in one worker, and spread the rest.

tests/tutorial/test_tutorial.py relies on it: its tests share tutorial/'s
own checkpoints, which one process builds and checks. Some releases of
pytest and pytest-xdist together drop the group without a word
(requirements/dev.txt pins a pair that keeps it), so this runs a small
suite the way make tutorial runs its own and reads where each test ran.
"""

import json

from child_process import run_python  # tests/, on sys.path under pytest's rootdir conftest

GROUPED = """
import json, os, pytest
pytestmark = pytest.mark.xdist_group("costly")

@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open("where.jsonl", "a") as f:
        f.write(json.dumps(["grouped", os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
"""

FREE = """
import json, os, pytest

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    with open("where.jsonl", "a") as f:
        f.write(json.dumps(["free", os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
"""


def test_a_group_runs_in_one_worker_and_the_rest_spread(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_free.py").write_text(FREE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = run_python(
        ["-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "where.jsonl").read_text().splitlines()]
    grouped = {worker for kind, worker in rows if kind == "grouped"}
    assert len(rows) == 12
    assert len(grouped) == 1, f"the group ran in {sorted(grouped)}: xdist_group is ignored"
    # Once every worker has collected, xdist hands each one a unit of work
    # (the group, or a free test) before any more, so both workers always run
    # something: a single worker would make the check above vacuous.
    workers = {worker for _, worker in rows}
    assert workers == {"gw0", "gw1"}, f"the tests ran in {sorted(workers)} only"

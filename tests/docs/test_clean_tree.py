"""tools/ci/check_clean_tree.py: running a command must leave what git tracks as it was.

CI calls the script around `make tutorial`, `make test` and `make bench`; these
tests run it on a small repository of their own with commands that do and do
not touch tracked files.
"""

import subprocess

import pytest

from tools.ci import check_clean_tree


@pytest.fixture
def repo(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/build/\n")
    (tmp_path / "tracked.txt").write_text("as committed\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "seed")
    return tmp_path


class Result:
    def __init__(self, returncode: int, stdout: str) -> None:
        self.returncode, self.stdout = returncode, stdout


@pytest.fixture
def check(capfd):
    """Runs the script's main on the test repository; its exit status and output."""

    def run(repo, *commands) -> Result:
        returncode = check_clean_tree.main(["--root", str(repo), *commands])
        return Result(returncode, capfd.readouterr().out)

    return run


def test_writes_to_ignored_paths_pass(repo, check):
    result = check(repo, "mkdir -p build/results && echo x > build/results/out.md")
    assert result.returncode == 0, result.stdout
    assert "the tree is as it was" in result.stdout


@pytest.mark.parametrize(
    "command",
    ["echo changed >> tracked.txt", "echo new > results.json", "rm tracked.txt"],
    ids=["modifies a tracked file", "leaves an untracked file", "deletes a tracked file"],
)
def test_touching_the_tree_fails_and_names_the_path(repo, check, command):
    result = check(repo, "true", command)
    assert result.returncode == 1, result.stdout
    assert f"{command!r} changed what git tracks" in result.stdout
    assert "tracked.txt" in result.stdout or "results.json" in result.stdout


def test_a_file_already_changed_counts_when_changed_again(repo, check):
    (repo / "tracked.txt").write_text("edited before the run\n")
    assert check(repo, "true").returncode == 0
    result = check(repo, "echo again >> tracked.txt")
    assert result.returncode == 1, result.stdout


def test_a_failing_command_fails(repo, check):
    result = check(repo, "exit 3")
    assert result.returncode == 3

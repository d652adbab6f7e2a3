""".ci/run, CI's entry point, stops before its first install where the disk
can't hold a run, and says how much it needs and has."""

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_run_refuses_a_disk_without_room(tmp_path):
    # A df that reports 3 GiB free wherever it is asked.
    df = tmp_path / "df"
    df.write_text(
        "#!/bin/sh\n"
        "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
        "for _ in \"$@\"; do echo '/dev/vda 100000000 1 3145728 1% /'; done\n"
    )
    df.chmod(df.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "needs 20 GiB free here and in" in proc.stderr
    assert "has 3 GiB" in proc.stderr
    assert "==>" not in proc.stdout  # no make target started

"""Result files (summaries, ledgers, reports) are written whole or not at all (issue 40)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from tuiapp.common import atomic_write
from tuiapp.common.atomic_write import write_atomic

ROOT = Path(__file__).parent.parent / "tuiapp"


def test_it_writes_replaces_and_keeps_an_existing_files_mode(tmp_path):
    path = tmp_path / "summary.json"
    write_atomic(path, '{"a": 1}\n')
    assert path.read_text() == '{"a": 1}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~atomic_write._UMASK
    path.chmod(0o600)
    write_atomic(path, b'{"a": 2}\n')
    assert path.read_text() == '{"a": 2}\n' and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failure_before_the_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, failure):
    path = tmp_path / "ledger.json"
    path.write_text("old, complete\n")
    renames: list[tuple[str, str]] = []

    def fail(src, dst):
        renames.append((os.path.dirname(src), os.fspath(dst)))
        raise failure

    monkeypatch.setattr(atomic_write.os, "replace", fail)
    with pytest.raises(type(failure)):
        write_atomic(path, "new, complete\n")
    assert path.read_text() == "old, complete\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"]
    # the temporary file lay beside the target: one file system, so the rename is atomic
    assert renames == [(str(tmp_path), str(path))]


def test_a_missing_directory_is_an_oserror_and_writes_nothing(tmp_path):
    with pytest.raises(OSError):
        write_atomic(tmp_path / "no" / "summary.json", "x")
    assert list(tmp_path.iterdir()) == []


# Files that are not results a reader may be reading: job scripts written before a job exists.
NOT_RESULTS = {"slurm/trial.py"}
WRITES = re.compile(r"\.write_text\(|\.write_bytes\(|open\([^)]*[\"'][wa]b?[\"']")


def test_every_result_file_is_written_through_the_one_helper():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in NOT_RESULTS or rel.startswith("sim/") or rel == "common/atomic_write.py":
            continue
        found += [f"{rel}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if WRITES.search(line)]
    assert found == [], f"write result files with tuiapp.common.atomic_write.write_atomic: {found}"

"""Descendants: the server's process tree kept current from /proc's pid list, as psutil sees it."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from tuiapp.server import proctree
from tuiapp.server.proctree import Descendants, ProcessTree

# A child that forks a grandchild, then both sleep: a two-level tree under a helper process.
# SIGCHLD ignored: an exited child is reaped at once (no zombie lingers in the tree).
TREE = ("import os, signal, time\n"
        "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
        "if os.fork() == 0:\n"
        "    time.sleep(60); os._exit(0)\n"
        "print('ready', flush=True); time.sleep(60)\n")


def _psutil_tree(pid: int) -> set[int]:
    return {c.pid for c in psutil.Process(pid).children(recursive=True)}


@pytest.fixture
def helper():
    """A process whose whole tree the test controls: helper -> child -> grandchild."""
    proc = subprocess.Popen([sys.executable, "-c",
                             "import signal, subprocess, sys, time\n"
                             "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
                             f"p = subprocess.Popen([sys.executable, '-c', {TREE!r}], stdout=subprocess.PIPE)\n"
                             "p.stdout.readline(); print('up', flush=True); time.sleep(60)\n"],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"up"
    yield proc
    for p in psutil.Process(proc.pid).children(recursive=True):
        p.kill()
    proc.kill()
    proc.wait()


def test_descendants_match_psutil_and_follow_changes(helper):
    tree = Descendants(helper.pid)
    first = tree.pids()
    assert set(first) == _psutil_tree(helper.pid) and len(first) == 2
    # a killed grandchild leaves the tree (the pid list changed: its ppid map is updated)
    child = psutil.Process(helper.pid).children()[0]
    grandchild = child.children()[0]
    grandchild.kill()
    for _ in range(100):
        if grandchild.pid not in tree.pids():
            break
        time.sleep(0.05)
    assert set(tree.pids()) == {child.pid} == _psutil_tree(helper.pid)


def test_an_unchanged_pid_list_reads_no_process(helper, monkeypatch):
    tree = Descendants(helper.pid)
    tree.pids()
    pids = proctree._proc_pids()
    monkeypatch.setattr(proctree, "_proc_pids", lambda: pids)
    reads = []
    monkeypatch.setattr(proctree, "_read_ppid", lambda pid: reads.append(pid))
    assert len(tree.pids()) == 2
    assert reads == []


def test_children_of_a_vanished_process_are_read_again(helper, monkeypatch):
    """A parent that exits re-parents its children: their ppid is read again, not assumed."""
    tree = Descendants(helper.pid)
    child = psutil.Process(helper.pid).children()[0]
    grandchild = child.children()[0]
    assert set(tree.pids()) == {child.pid, grandchild.pid}
    child.kill()
    for _ in range(100):  # the orphan goes to init (or a subreaper): no longer the helper's
        if grandchild.pid not in tree.pids():
            break
        time.sleep(0.05)
    assert tree.pids() == []
    assert _psutil_tree(helper.pid) == set()
    grandchild.kill()  # no longer under the helper: the fixture would not reach it


def test_process_tree_keeps_descendants_it_saw(helper):
    tree = ProcessTree(helper.pid)
    tree.snapshot()
    assert set(tree.alive()) >= _psutil_tree(helper.pid)

"""The collector waits while tuiapp starts, then what start-up built is frozen and it resumes."""

import subprocess
import sys

PROBE = """
import gc, time
from tuiapp.common.gc_settle import settle_heap_after_start
thread = settle_heap_after_start(at_s=(0.2, 0.4))
print(gc.isenabled(), gc.get_freeze_count() == 0)
time.sleep(0.3)
first = gc.get_freeze_count()
print(gc.isenabled(), first > 0)
junk = [[] for _ in range(1000)]  # made after the first freeze: frozen by the second
thread.join(5)
print(gc.isenabled(), gc.get_freeze_count() >= first + 900, thread.is_alive())
"""


def test_collector_paused_at_start_then_frozen_and_resumed_at_each_settle_point():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.split("\n")[:3] == ["False True", "True True", "True True False"]


def test_the_command_settles_its_heap_and_main_alone_does_not():
    # entry() is the console script and python -m tuiapp; tests call main() in their process
    probe = ("import contextlib, gc, io, sys; from tuiapp import cli; sys.argv = ['tuiapp']\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    cli.main([]); a = gc.isenabled(); cli.entry(); b = gc.isenabled()\n"
             "print(a, b)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.split() == ["True", "False"]

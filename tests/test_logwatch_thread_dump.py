"""A Python thread dump in a log (tuiapp/logwatch/thread_dump.py): py-spy's is a hang, faulthandler's
a crash, when the report it was printed for is not there; beside that report it raises nothing more."""

from __future__ import annotations

from logwatch_helpers import scan_text

from tuiapp.logwatch.thread_dump import thread_dump

PYSPY = ('Thread 835995 (active): "MainThread"\n'
         "    broadcast (torch/distributed/distributed_c10d.py:1191)\n"
         "    train_batch (deepspeed/runtime/pipe/engine.py:330)\n")
FAULT = ('  File "/sglang/srt/managers/scheduler.py", line 510 in event_loop_overlap\n'
         '  File "/usr/lib/python3.10/multiprocessing/process.py", line 108 in run\n')


def test_the_shapes_of_a_dump() -> None:
    assert thread_dump(PYSPY.splitlines()) == ("hang", 1)
    assert thread_dump(FAULT.splitlines()) == ("crash", 0)
    # one frame is no dump; a traceback's frames (with the comma) are a traceback's
    assert thread_dump(PYSPY.splitlines()[:2]) is None
    assert thread_dump(['  File "/a.py", line 1, in f', '  File "/b.py", line 2, in g']) is None


def test_a_dump_alone_is_the_failure_it_shows() -> None:
    assert [(i["kind"], i["signature_line"], i["message"]) for i in scan_text(PYSPY)] == [
        ("hang", 2, "broadcast (torch/distributed/distributed_c10d.py:1191)")]
    assert [(i["kind"], i["first_line"]) for i in scan_text(FAULT)] == [("crash", 1)]


def test_every_ranks_dump_before_the_watchdogs_report_is_that_report() -> None:
    dumps = "".join(f"[2026-03-14 09:07:05 TP{r}] Pyspy dump for PID 8130{r}:\n" + PYSPY for r in range(4))
    report = "".join(f"[2026-03-14 09:07:05 TP{r}] Scheduler watchdog timeout (self.watchdog_timeout=300, "
                     "self.soft=False)\n" for r in range(4))
    incs = scan_text(dumps + report)
    assert [(i["kind"], i["message"][:25]) for i in incs] == [("hang", "Scheduler watchdog timeou")]


def test_a_dump_after_a_fatal_error_is_that_death() -> None:
    text = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f48 (most recent call first):\n" + FAULT
    assert [(i["kind"], i["message"]) for i in scan_text(text)] == [("crash", "Fatal Python error: Segmentation fault")]

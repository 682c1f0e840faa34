"""The whole app's CPU on the real pipeline: real processes, a real pseudo-terminal.

    .venv/bin/python benchmarks/app_cpu.py [--seconds 30] [--warmup 10] [--sizes 80x24,160x48,200x60]
                                           [--demo-sizes 160x48] [--skip-demo] [--skip-attach]
                                           [--baseline-tree DIR] [--repeat N] [--py-spy DIR]

One run, in order:

1. ``tuiapp attach URL --telemetry sim --concurrency 1`` against the simulator started here
   as its own process (8 simulated GPUs, --enable-metrics), as a TUI on a pty at each size
   and headless: ``--warmup`` seconds to reach steady state, then ``--seconds`` measured.
2. ``tuiapp demo`` (the whole campaign, every trial's simulator launched by tuiapp itself)
   as a TUI on a pty at each ``--demo-sizes`` and headless, from start to the last trial in
   the ledger.
3. AIPerf's dashboard at concurrency 1 against the same simulator, where it is installed
   (bench_peers.AIPERF_VENV, e.g. ``python3 -m venv /work/peers/aiperf-venv &&
   /work/peers/aiperf-venv/bin/pip install aiperf==0.13.0``); a line says when it is not.
   Its whole process tree counts (it runs its workers as processes), its own process apart.

The pty is drained continuously, as a terminal does (output bytes/s are printed too). CPU
is user + system from /proc/PID/stat: tuiapp's own process (its threads included, its
children not), and separately the simulator (for attach: the process started here; for
the demo: tuiapp's reaped children, i.e. every trial's simulator). Figures are CPU seconds
per wall second in % of one core. The machine may be shared: a process's CPU seconds per
wall second barely move with other load (it is the work done, not the time it took), but
a very busy box delays timers and so shifts work between windows; compare ratios from one
run rather than figures from different runs.

Before (commit 12dbc5e, this 2-core box shared with other helpers, load average ~4.6;
``--seconds 30 --warmup 10``), % of one core:

    attach c=1 TUI 80x24     tuiapp 4.50   simulator 1.80
    attach c=1 TUI 160x48    tuiapp 5.23   simulator 1.90
    attach c=1 TUI 200x60    tuiapp 5.17   simulator 1.73
    attach c=1 headless      tuiapp 1.80   simulator 1.70
    demo headless (97 s)     tuiapp 3.90   simulators 2.08
    demo TUI 160x48 (98 s)   tuiapp 10.06  simulators 2.42

Before/after in one run (``--baseline-tree`` = a ``git archive 12dbc5e``, ``--sizes
160x48``; two runs, the second with uvloop), % of one core, before -> after:

    attach c=1 TUI 160x48    5.83 -> 3.60     5.97 -> 3.73
    attach c=1 headless      2.37 -> 1.83     2.57 -> 1.60
    demo headless            4.58 -> 2.83     4.37 -> 3.03
    demo TUI 160x48         11.22 -> 8.68    12.99 -> 9.02

Round 2 (frames follow the data, at most one a second; GPUs at 4 Hz only during the demo's
compressed start-up; a changed panel rendered once per frame; a ledger whose width never
changes, so no whole-screen layout passes; fewer sampler wake-ups). Before = main at
f94684c (round 1), after = this tree, in one run each; the box was ~2.5x slower per unit of
work than in round 1 (the same round-1 code measured 10.8% where it had measured 3.7%), so
only the ratios carry over:

    --sizes 160x48 --seconds 20 --warmup 8 --repeat 2 --skip-demo  (medians)
    attach c=1 TUI 160x48   10.80 -> 9.80   ratio 0.91 (simulator 0.99)
    attach c=1 headless      4.37 -> 4.17   ratio 0.95 (simulator 0.98)
    --skip-attach --demo-sizes 160x48
    demo headless            5.19 -> 5.05   ratio 0.97 (simulator 1.09; tuiapp/simulator 1.38 -> 1.23)
    demo TUI 160x48         11.21 -> 9.43   ratio 0.84 (simulator 1.01); pty out 34.4 -> 24.7 KiB/s

Those demo rows sampled the GPUs at 1 s from ready on; the final code keeps 4 Hz for 5 s
after ready (a short benchmark keeps its PCIe samples). With the final code, once the box
was back to round-1 speed: demo headless 3.32 -> 3.29 (ratio 0.99, simulator 1.03: no
measurable gain); attach c=1 TUI 160x48 --repeat 2: 4.75 -> 4.12 (ratio 0.87, simulator
1.02). An earlier demo-headless pair with the 1 s-from-ready cadence: 6.42 -> 5.21
(ratio 0.81, simulator 0.95). Back to back, runs of the same code differ by up to 1.7x here
(attach TUI before: 6.0, 6.1, 10.2 in one --repeat 3 run): use --repeat.

Round 3, rendering (panels make their own strips with Textual's style arithmetic memoised,
tones memoised per render, a lean ANSI-to-truecolor filter, an input thread that blocks
instead of waking 10 times a second). Before = 92aed27, after = tui-cpu, one run each:

    --sizes 160x48 --seconds 30 --warmup 10 --skip-demo --skip-headless --repeat 2 (medians)
    attach c=1 TUI 160x48   2.63 -> 1.87   ratio 0.71 (simulator 0.90)
    --skip-attach --skip-headless --demo-sizes 160x48
    demo TUI 160x48         5.51 -> 4.52   ratio 0.82 (simulator 0.88)

Per frame in the attach TUI, Textual's compositor went from ~14 ms to ~8.7 ms (the GPU
table 7.5 -> 2.5 ms). What is left in the demo: a layout pass (~20 ms) per new alert (the
alert list is height: auto), the ledger's DataTable re-rendering every row when the running
trial's live mean moves, and the compositor re-rendering every widget inside the bounding
box of the changed ones.

Round 3, the pipeline and rendering together (final code of issue 15's third round) against
5951e30 (before round 3), one run, box quiet (load 0.2) but for a memory soak beside it:

    --sizes 80x24,160x48,200x60 --seconds 30 --warmup 10 --demo-sizes 160x48
    attach c=1 TUI 80x24     3.27 -> 1.47   ratio 0.45 (simulator 0.95)
    attach c=1 TUI 160x48    3.60 -> 1.57   ratio 0.44 (simulator 1.05)
    attach c=1 TUI 200x60    3.77 -> 1.63   ratio 0.43 (simulator 1.00)
    attach c=1 headless      2.23 -> 0.60   ratio 0.27 (simulator 0.94)
    demo headless            2.63 -> 1.50   ratio 0.57 (simulator 0.93)
    demo TUI 160x48          5.64 -> 3.94   ratio 0.70 (simulator 1.07)

What the pipeline's share was: on this VM a wake-up costs ~160 us of CPU whatever it does
(an asyncio loop woken 100 times a second by a timer: 1.6% of a core; a 90 tok/s stream
read chunk by chunk: 1.55%). The third round cut wake-ups: streams read every 0.5 s with
the kernel's arrival stamps, log records polled only while one is open (the 20-50 ms
tickers ran always), host and simulated-GPU sampling on the loop, the process tree walked
every 5 s once serving, the GPU watchdog at hang/4, the input thread without a timeout; and
the metrics poll's Prometheus parsing (0.5 ms of 1.15 ms per poll). In the demo ~0.4 s of
~1.4 s CPU is start-up (imports: pydantic models, httpx, regexes), a fixed cost.

Round 4, fewer loop wake-ups, measured against bb146a1:
- A launched server's log watcher runs on the output thread, which also finishes quiet
  records.
- A relay wakes the loop only for urgent events.
- Periodic tasks share one clock grid.

Together these took the demo's blocking loop iterations from 20.4/s to 7.7/s. Bytecode is
now compiled first for each tree, because this sandbox sets PYTHONDONTWRITEBYTECODE.

    --skip-attach --demo-sizes 160x48
    demo headless            1.50 -> 1.35   ratio 0.90 (simulator 1.04)
    demo TUI 160x48          3.81 -> 3.90   ratio 1.03 (simulator 1.01)
    --skip-demo --sizes 160x48 --seconds 30 --warmup 10
    attach c=1 TUI 160x48    1.77 -> 1.53   ratio 0.87 (simulator 0.96)
    attach c=1 headless      0.67 -> 0.50   ratio 0.75 (simulator 0.91)

Where the headless demo's CPU goes now (a /proc timeline at 0.5 s, 5 s windows):
- the first 5 s: ~0.6 s, mostly imports (~0.3 s: pydantic's import and model building,
  ~200 regex compiles, dataclasses) and the first trial's launch;
- steady: 0.02-0.04 s per 5 s;
- each trial change: 0.05-0.1 s more.

Round 5, measured against 1137a6c (--baseline-tree, one run per line; a run's pairs alternate):

    --skip-attach --demo-sizes "" --repeat 2/2/3   (three runs, all pairs)
    demo headless   before 1.33 1.28 | 1.23 1.23 | 1.16 1.23 1.09
                    after  1.16 1.07 | 1.18 1.03 | 1.09 1.13 0.98   (the first run lacked the
                    last three headless changes); medians per run 1.30 -> 1.12, 1.23 -> 1.11,
                    1.16 -> 1.09 (ratios 0.86, 0.90, 0.94)
    --skip-attach --skip-headless --demo-sizes 160x48 --repeat 2
    demo TUI 160x48 3.46 -> 3.01 (the TUI changes alone, another run)
    demo TUI 160x48 3.85 3.89 -> 3.19 3.09 (everything; medians 3.87 -> 3.14, ratio 0.81)

Headless, per thread over a whole campaign (thread CPU at exit): the main thread ~0.82-0.93 s,
of which ~0.23 s before the loop's first iteration (the interpreter, imports, pydantic
building the event models), and the server-output threads ~0.25 s (2,200 log lines of 8
trials' start-ups). What changed:
- host samples only for a sink that shows or keeps them (the TUI, a recording);
- /server_info polled only while /metrics lacks the throughput (the same two figures);
- periodic sleeps watch one stop task per Event (wait_for made and cancelled one per tick);
- the headless printer and the recorder take samples, log records, server figures and
  requests on their next wake-up or the next 1 s tick (Printer.run resumes 566 -> 203);
- the output thread reads a burst in one read (950 -> ~400 reads) and gives statistics and
  access-log lines 0.5 s instead of a 30 ms quiet wake-up each;
- log events validated, not model_construct (pydantic's construct is pure Python, 2-5x
  slower); the simulated GPUs' JSON with orjson and their samples validated from its dict;
  secret-name checks cached.
TUI: the ledger as a cursor panel (the DataTable re-rendered every row each frame), the GPU
table and log tail building less per frame, and partial updates that render only the rows
they send and skip containers their children cover (tuiapp/tui/banded_update.py).

Round 6, against 1137a6c again (one run per line; the box was slower: the same baseline
measured 1.25-1.39% headless, 1.09-1.33% in round 5):

    --skip-attach --demo-sizes "" --repeat 3
    demo headless   before 1.25 1.30 1.39 -> after 0.95 1.05 1.03   (medians 1.30 -> 1.03, ratio 0.79)
    (--repeat 2, a second run)  before 1.55 1.34 -> after 0.96 1.02   (medians 1.44 -> 0.99, ratio 0.69)
    --skip-attach --skip-headless --demo-sizes 160x48 --repeat 2
    demo TUI 160x48 before 3.95 3.65 -> after 2.78 2.88   (medians 3.80 -> 2.83, ratio 0.75)
    --skip-demo --sizes 160x48 --seconds 30 --warmup 10
    attach c=1 TUI 160x48 1.53 -> 1.37 (0.89); attach c=1 headless 0.53 -> 0.33 (0.63)

What changed: the server launched through setpriv --pdeathsig (a preexec_fn made subprocess
fork() instead of vfork(): 26,000 -> 9,300 minor faults over the headless campaign); the
dashboard takes dense events just before its next frame instead of per burst, and speculation
on/off restyles its panel, not the screen; the lazy sinks' tick on the samplers' tick; the lean
transport's read timeout without wait_for's task; streams read every 1 s; --sim GPUs at 4 Hz
until 3 s after ready (was 5), with the collector judging each sample by its own interval.

Round 7, against 821e347 (round 6), on a quieter day (that baseline measured 0.86-0.93% headless):

    --skip-attach --demo-sizes "" --repeat 3
    demo headless   before 0.92 0.92 0.93 -> after 0.86 0.94 0.95   (medians 0.92 -> 0.94, ratio 1.02)
    --skip-attach --skip-headless --demo-sizes 160x48 --repeat 2
    demo TUI 160x48 before 2.79 2.49 -> after 2.58 2.38   (medians 2.64 -> 2.48, ratio 0.94; simulator 0.96)
    --skip-demo --sizes 160x48 --seconds 30 --warmup 10
    attach c=1 TUI 160x48 1.27 -> 1.13 (0.89); attach c=1 headless 0.33 -> 0.30 (0.90)

What changed: the lean transport's spaced stream reads on the shared clock grid (each stream
had its own 1 s phase: a wake-up a second per stream); the benchmark closes its SSE reader
at [DONE] (five async generators a request were left for the loop to close) and keeps the
connection of a body whose end came with [DONE]; the health poll on the 0.5 s grid.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tuiapp.sim.process import SimProcess  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
TUIAPP = [sys.executable, "-m", "tuiapp"]
TREE: Path | None = None  # --baseline-tree: the tuiapp source tree the next runs import
SIM_ARGS = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--enable-metrics"]


def proc_cpu_s(pid: int) -> tuple[float, float]:
    """(own user+sys, reaped children's user+sys) of ``pid`` in seconds; a zombie still answers."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime) / CLK_TCK, (cutime + cstime) / CLK_TCK


class Drain:
    """Reads a pty master as fast as the app writes, like a terminal emulator would."""

    def __init__(self, fd: int, keep: bool = False) -> None:
        self.fd = fd
        self.bytes = 0
        self.chunks: list[tuple[float, bytes]] | None = [] if keep else None  # (monotonic time read, bytes)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.bytes += len(data)
            if self.chunks is not None:
                self.chunks.append((time.monotonic(), data))

    def send(self, text: str) -> None:
        try:
            os.write(self.fd, text.encode())
        except OSError:
            pass


class App:
    """A tuiapp process: on a pty of ``size`` (cols, rows), or headless with output to a file
    (``keep_output``: to a pipe, its bytes kept with the time each read came, as the pty's are)."""

    def __init__(self, argv: list[str], size: tuple[int, int] | None, cwd: Path, keep_output: bool = False) -> None:
        self.size = size
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", "PYTHONUNBUFFERED": "1"}
        if TREE is not None:  # the baseline's code, for tuiapp and every process it starts
            env["PYTHONPATH"] = str(TREE)
        env.pop("TEXTUAL", None)
        self.drain: Drain | None = None
        self.popen: subprocess.Popen | None = None
        if size is None:
            self._out = subprocess.PIPE if keep_output else open(cwd / "headless.out", "wb")
            self.popen = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=env, cwd=cwd)
            self.pid = self.popen.pid
            if keep_output:
                self.drain = Drain(self.popen.stdout.fileno(), True)
            return
        cols, rows = size
        pid, fd = pty.fork()
        if pid == 0:  # child: size the terminal before the app asks for it
            try:
                fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid = pid
        self.drain = Drain(fd, keep_output)

    def cpu_s(self) -> tuple[float, float]:
        return proc_cpu_s(self.pid)

    def alive(self) -> bool:
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return info is None

    def stop(self, timeout_s: float = 20.0) -> tuple[float, float]:
        """Quit as a user would (q; SIGINT for headless), then the CPU totals read from the
        zombie before it is reaped; kills it if it does not go."""
        tty = self.size is not None
        if tty:
            self.drain.send("q")
        else:
            os.kill(self.pid, signal.SIGINT)
        deadline = time.monotonic() + timeout_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
            if tty and time.monotonic() > deadline - timeout_s / 2:
                os.kill(self.pid, signal.SIGTERM)
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            while self.alive():
                time.sleep(0.05)
        totals = self.cpu_s()
        os.waitpid(self.pid, 0)
        if self.popen is not None:
            self.popen.returncode = 0  # reaped above
            if self.drain is not None:
                self.drain.thread.join(5)  # the pipe's last bytes, up to its end
            (self.popen.stdout or self._out).close()
        elif self.drain is not None:
            os.close(self.drain.fd)
        return totals


def pct(cpu_s: float, wall_s: float) -> float:
    return 100.0 * cpu_s / wall_s if wall_s > 0 else 0.0


def label(size: tuple[int, int] | None) -> str:
    return f"TUI {size[0]}x{size[1]}" if size else "headless"


PROFILE_DIR: Path | None = None  # --py-spy DIR: a collapsed-stack profile of each measured window


def profile(pid: int, name: str, seconds: float) -> subprocess.Popen | None:
    """py-spy on ``pid`` for the window (non-blocking: it never pauses the app it samples)."""
    if PROFILE_DIR is None:
        return None
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    out = PROFILE_DIR / f"{name.replace(' ', '_')}.txt"
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--nonblocking",
                             "--rate", "100", "--format", "raw", "--output", str(out), "--threads"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure_attach(sim: SimProcess, size: tuple[int, int] | None, warmup_s: float, seconds: float,
                   concurrency: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="app_cpu_attach_"))
    argv = [*TUIAPP, "attach", sim.url, "--telemetry", "sim", "--concurrency", str(concurrency)]
    if size is None:
        argv.append("--headless")
    app = App(argv, size, work)
    try:
        time.sleep(warmup_s)
        if not app.alive():
            raise RuntimeError(f"tuiapp attach ({label(size)}) exited early")
        a0, s0, b0, w0 = app.cpu_s()[0], sum(proc_cpu_s(sim.proc.pid)), _bytes(app), time.monotonic()
        spy = profile(app.pid, f"attach {label(size)}", seconds)
        time.sleep(seconds)
        if spy is not None:
            spy.wait(30)
        a1, s1, b1, w1 = app.cpu_s()[0], sum(proc_cpu_s(sim.proc.pid)), _bytes(app), time.monotonic()
    finally:
        app.stop()
        shutil.rmtree(work, ignore_errors=True)
    wall = w1 - w0
    return {"what": f"{_tag()}attach c={concurrency} {label(size)}", "tuiapp_pct": pct(a1 - a0, wall),
            "sim_pct": pct(s1 - s0, wall), "out_kib_s": (b1 - b0) / wall / 1024, "wall_s": wall}


def _tag() -> str:
    return "before " if TREE is not None else ("after  " if BASELINE is not None else "")


BASELINE: Path | None = None
SHOW = print  # main() points it at its row printer


REPEAT = 1  # --repeat: before/after pairs per scenario, interleaved


def both(measure, *args) -> None:
    """Run one measurement with the baseline tree (when given), then with this one; REPEAT
    times, alternating, so a burst of other load on the box hits both sides alike."""
    global TREE
    for _ in range(REPEAT):
        if BASELINE is not None:
            TREE = BASELINE
            try:
                SHOW(measure(*args))
            finally:
                TREE = None
        SHOW(measure(*args))


def _bytes(app: App) -> int:
    return app.drain.bytes if app.drain is not None else 0


def _ledger_trials(path: Path) -> int:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0
    trials = data.get("trials") if isinstance(data, dict) else data
    return len(trials) if isinstance(trials, list) else 0


def measure_demo(size: tuple[int, int] | None, n_trials: int | None, limit_s: float) -> dict:
    """The whole campaign: from start until the ledger holds every trial (headless: until it exits)."""
    work = Path(tempfile.mkdtemp(prefix="app_cpu_demo_"))
    ledger = work / "ledger.json"
    argv = [*TUIAPP, "demo", "--ledger", str(ledger)]
    if size is None:
        argv.append("--headless")
    w0 = time.monotonic()
    app = App(argv, size, work)
    spy = profile(app.pid, f"demo {label(size)}", 90)
    try:
        deadline = w0 + limit_s
        while time.monotonic() < deadline and app.alive():
            if n_trials is not None and _ledger_trials(ledger) >= n_trials:
                break
            time.sleep(0.2)
        if size is not None:
            # campaign over: the last trial's server is being stopped; its CPU counts once reaped
            t_end = time.monotonic() + 10
            while time.monotonic() < t_end and _children(app.pid):
                time.sleep(0.1)
        wall = time.monotonic() - w0
        own, children = app.cpu_s()
        out = _bytes(app)
    finally:
        totals = app.stop()
        if spy is not None:
            spy.wait(30)
        trials = _ledger_trials(ledger)
        shutil.rmtree(work, ignore_errors=True)
    if size is None:  # headless ends by itself: the totals at exit are the campaign's
        own, children = totals
    return {"what": f"{_tag()}demo {label(size)}", "tuiapp_pct": pct(own, wall), "sim_pct": pct(children, wall),
            "out_kib_s": out / wall / 1024, "wall_s": wall, "trials": trials}


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def measure_aiperf(sim: SimProcess, size: tuple[int, int], warmup_s: float, seconds: float) -> dict | str:
    from bench_peers import AIPERF_VENV, ensure_tokenizer

    exe = AIPERF_VENV / "bin" / "aiperf"
    if not exe.exists():
        return f"aiperf: not installed here ({exe} missing): skipped"
    tok = ensure_tokenizer()
    if tok is None:
        return "aiperf: no tokenizer for it: skipped"
    work = Path(tempfile.mkdtemp(prefix="app_cpu_aiperf_"))
    argv = [str(exe), "profile", "-m", "default", "--url", sim.url, "--endpoint-type", "chat", "--streaming",
            "--concurrency", "1", "--benchmark-duration", str(int(warmup_s + seconds + 30)),
            "--tokenizer", str(tok), "--ui-type", "dashboard", "--output-artifact-dir", str(work)]
    app = App(argv, size, work)
    try:
        time.sleep(warmup_s)
        main0, a0, w0 = app.cpu_s()[0], tree_cpu_s(app.pid), time.monotonic()
        time.sleep(seconds)
        main1, a1, w1 = app.cpu_s()[0], tree_cpu_s(app.pid), time.monotonic()
    finally:
        os.killpg(app.pid, signal.SIGKILL) if app.alive() else None
        app.stop(timeout_s=2)
        shutil.rmtree(work, ignore_errors=True)
    # aiperf's work is spread over worker processes it starts: the whole tree counts
    return {"what": f"aiperf dashboard c=1 {label(size)}", "tuiapp_pct": pct(a1 - a0, w1 - w0),
            "sim_pct": float("nan"), "out_kib_s": 0.0, "wall_s": w1 - w0,
            "note": f"its own process {pct(main1 - main0, w1 - w0):.2f}%, the rest its workers"}


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid``, its live descendants and the children it reaped."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = sum(proc_cpu_s(pid))  # own + reaped children
    for proc in procs[1:]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass  # gone between the listing and the read: its time shows as its parent's reaped children
    return total


def _median(rows: list[dict], what: str) -> dict | None:
    """The median of each figure over the rows of one scenario."""
    import statistics

    picked = [r for r in rows if r["what"] == what]
    if not picked:
        return None
    return {k: statistics.median(r[k] for r in picked) for k in ("tuiapp_pct", "sim_pct")}


def compile_trees(trees: list[Path]) -> str:
    """Bytecode for each tree's tuiapp, as a user's install has after its first run. Where
    PYTHONDONTWRITEBYTECODE is set (this sandbox sets it) nothing is ever cached, and every
    start would compile ~90 modules from source: ~0.1 s of CPU that no user pays twice."""
    import compileall

    for tree in trees:
        compileall.compile_dir(str(tree / "tuiapp"), quiet=2)
    return (f"bytecode: compiled for {len(trees)} tree(s)"
            f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        cols, rows = part.lower().split("x")
        out.append((int(cols), int(rows)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="measured window of each attach run")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before the window (start-up, warm-up)")
    ap.add_argument("--sizes", default="80x24,160x48,200x60", help="attach TUI sizes")
    ap.add_argument("--demo-sizes", default="160x48", help="demo TUI sizes (each a whole campaign, ~100 s)")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--skip-attach", action="store_true")
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--skip-headless", action="store_true", help="TUI runs only (profiling)")
    ap.add_argument("--demo-limit", type=float, default=400.0, help="give up on a campaign after this long")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--baseline-tree", metavar="DIR", help="a checkout of the code before a change "
                    "(e.g. git archive OLD | tar -x -C DIR): every scenario runs with it, then with "
                    "this tree, back to back, and the ratios after/before are printed")
    ap.add_argument("--repeat", type=int, default=1, help="run each scenario this many times (alternating "
                    "with the baseline); the after/before ratio is of the medians")
    ap.add_argument("--py-spy", metavar="DIR", help="profile each measured window with py-spy into DIR "
                    "(collapsed stacks; its sampling perturbs the figures a little)")
    args = ap.parse_args()
    global PROFILE_DIR, BASELINE, SHOW, REPEAT
    REPEAT = max(1, args.repeat)
    if args.baseline_tree:
        BASELINE = Path(args.baseline_tree).resolve()
    if args.py_spy:
        PROFILE_DIR = Path(args.py_spy)
        PROFILE_DIR.mkdir(parents=True, exist_ok=True)

    compiled = compile_trees([Path(__file__).resolve().parents[1], *([BASELINE] if BASELINE else [])])
    rows: list[dict] = []
    notes: list[str] = []
    print(compiled)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start (shared box: "
          "CPU s per wall s of one process is robust to other load; compare rows of this run)")

    def show(row: dict) -> None:
        rows.append(row)
        extra = f", {row['trials']} trials" if "trials" in row else ""
        extra += f" ({row['note']})" if "note" in row else ""
        print(f"  {row['what']:<32} tuiapp {row['tuiapp_pct']:6.2f}% of a core | simulator {row['sim_pct']:6.2f}%"
              f" | pty out {row['out_kib_s']:7.1f} KiB/s | {row['wall_s']:.0f} s{extra}", flush=True)

    SHOW = show
    if not args.skip_attach:
        sim = SimProcess(SIM_ARGS, speed=20)
        try:
            sim.wait_ready(60)
            print(f"attach: simulator {sim.url} (pid {sim.proc.pid}), 8 GPUs; "
                  f"{args.warmup:g} s warm-up, {args.seconds:g} s measured")
            for size in [*parse_sizes(args.sizes), *([] if args.skip_headless else [None])]:
                both(measure_attach, sim, size, args.warmup, args.seconds, args.concurrency)
            result = measure_aiperf(sim, (160, 48), args.warmup, args.seconds)
            if isinstance(result, str):
                notes.append(result)
                print("  " + result)
            else:
                show(result)
        finally:
            sim.stop()

    if not args.skip_demo:
        print("demo: the whole campaign, from start to the last trial in the ledger")
        n_trials = None
        if not args.skip_headless:
            both(measure_demo, None, None, args.demo_limit)
            n_trials = max(r.get("trials") or 0 for r in rows) or None
        else:
            from tuiapp.trials.plan import load_plan
            from tuiapp.trials.plans import plan_path

            n_trials = len(load_plan(plan_path("campaign")).all())
        for size in parse_sizes(args.demo_sizes):
            both(measure_demo, size, n_trials, args.demo_limit)

    print("ratios (tuiapp's CPU / the simulator's, and / headless of the same command):")
    for row in rows:
        base = next((r for r in rows if r["what"].split(" TUI")[0].split(" headless")[0]
                     == row["what"].split(" TUI")[0].split(" headless")[0] and r["what"].endswith("headless")), None)
        vs_sim = row["tuiapp_pct"] / row["sim_pct"] if row["sim_pct"] and row["sim_pct"] == row["sim_pct"] else float("nan")
        vs_head = row["tuiapp_pct"] / base["tuiapp_pct"] if base and base["tuiapp_pct"] else float("nan")
        print(f"  {row['what']:<32} / simulator {vs_sim:5.2f}   / headless {vs_head:5.2f}")
    if BASELINE is not None:
        print("after / before (same scenario, back to back in this run; medians of --repeat runs):")
        seen = set()
        for row in rows:
            if not row["what"].startswith("after  ") or row["what"] in seen:
                continue
            seen.add(row["what"])
            name = row["what"][len("after  "):]
            new = _median(rows, "after  " + name)
            old = _median(rows, "before " + name)
            if old and old["tuiapp_pct"]:
                sim_ratio = (new["sim_pct"] / old["sim_pct"]) if old["sim_pct"] else float("nan")
                print(f"  {name:<32} tuiapp {old['tuiapp_pct']:6.2f}% -> {new['tuiapp_pct']:6.2f}%  "
                      f"ratio {new['tuiapp_pct'] / old['tuiapp_pct']:5.2f}"
                      f"   (simulator {sim_ratio:5.2f}: how much the box itself moved)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "notes": notes}, indent=2) + "\n")


if __name__ == "__main__":
    main()

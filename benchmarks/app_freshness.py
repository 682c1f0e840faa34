"""How fresh the dashboard's figures are, on the real pipeline: a request's tok/s and a
failure's alert, from the moment they happen to the moment the user can see them.

    .venv/bin/python benchmarks/app_freshness.py [--seconds 60] [--size 160x48] [--modes launch,attach]
                                                 [--skip-headless] [--baseline-tree DIR] [--json FILE]

Needs pyte, a terminal emulator, to read the screen: ``pip install -e '.[bench]'``.

The server is this script run as ``--as-server``: the simulator (8 GPUs, --enable-metrics)
as its child, behind a TCP proxy on the port tuiapp is given, plus a writer that prints an
SGLang scheduler traceback every 2-5 s, its exception line tagged, among the simulator's
own output. It notes two kinds of moment in a notes file (CLOCK_MONOTONIC, which every
process shares):
- the proxy passing a stream's ``[DONE]`` on to tuiapp (a request's end as the client sees it);
- the write of each traceback.

Two ways in, each as a TUI on a real pseudo-terminal and headless:
- ``launch``: ``tuiapp launch --telemetry sim -- <this server>``; the output goes through
  tuiapp's pipe from the server (the demo's and every launch's path);
- ``attach``: the server runs on its own, its output to a file, and ``tuiapp attach URL
  --telemetry sim --log FILE`` follows it.

What is timed, from the moment above to the moment it shows:
- tok/s age: a run's figures (the decode panel's ``n=K`` reaching K+1 on the screen; the
  ``run #K`` line headless). The session's first ``[DONE]`` is the warm-up request's.
- alert age: the tag in the alert list (the screen's columns under the alerts panel title:
  the log tail shows the lines too, but a log line is not an alert; the ``ALERT`` line headless).

The pty's bytes are stamped and kept while the session runs and fed through pyte afterwards,
so the emulator costs the measured processes nothing. The issue's bar: a tok/s figure no
more than 1 s old, an alert within 100 ms of its line.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import app_cpu  # noqa: E402
from alert_latency import failure_record, tag_of  # noqa: E402

from tuiapp.sim.process import free_port  # noqa: E402

WARMUP_REQUESTS = 1  # attach's and launch's default warm-up: its [DONE] comes before run #0's
FIRST_INCIDENT_S = 3.0  # after the simulator is ready


# --- the server side (``--as-server``) ---------------------------------------------------

class Notes:
    """JSON lines of (what, monotonic time) to a file, written as they happen."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def add(self, **fields) -> None:
        with self._lock:
            os.write(self._fd, json.dumps(fields).encode() + b"\n")


class DoneProxy:
    """A TCP proxy to ``upstream`` on ``port``; notes when each ``[DONE]`` goes out to the client."""

    def __init__(self, port: int, upstream: int, notes: Notes) -> None:
        self.port, self.upstream, self.notes = port, upstream, notes
        self._ready = threading.Event()
        threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True).start()
        self._ready.wait(10)

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await server.serve_forever()

    async def _client(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            cw.close()
            return
        await asyncio.gather(self._pipe(cr, uw, False), self._pipe(ur, cw, True))

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter, watch: bool) -> None:
        tail = b""
        try:
            while data := await r.read(65536):
                if watch and b"[DONE]" in tail + data:
                    self.notes.add(done=time.monotonic())  # before the write: tuiapp may show it at once
                w.write(data)
                tail = data[-8:]
                await w.drain()
        except OSError:
            pass
        finally:
            w.close()


def serve(port: int, notes_path: str, log_path: str | None, seed: int) -> None:
    """The server tuiapp sees: the simulator behind the proxy, tracebacks among its output."""
    notes = Notes(notes_path)
    out_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if log_path else 2
    sim_port = free_port()
    # this tree's simulator whichever tuiapp launched us (a baseline's PYTHONPATH comes with launch)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    sim = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.server", "--port", str(sim_port), "--sim-speed", "20",
                            *app_cpu.SIM_ARGS], stdout=out_fd, stderr=out_fd, stdin=subprocess.DEVNULL, env=env)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    DoneProxy(port, sim_port, notes)
    rng = random.Random(seed)
    while not stop.is_set() and sim.poll() is None and not healthy(sim_port):  # tracebacks once it serves
        stop.wait(0.1)
    stop.wait(FIRST_INCIDENT_S)
    n = 0
    while not stop.is_set() and sim.poll() is None:
        tag = "fr" + tag_of(n)
        record = failure_record(time.time(), rng.randrange(8),
                                f"AssertionError: {tag} hidden_states.shape[0] > max_num_tokens").encode()
        t_write = time.monotonic()
        os.write(out_fd, record)  # one write, as logging prints a record: no other line inside it
        notes.add(tag=tag, t=t_write)
        n += 1
        stop.wait(rng.uniform(2.0, 5.0))
    if sim.poll() is None:
        sim.terminate()
        sim.wait(10)


# --- the measuring side ---------------------------------------------------------------------

class Server:
    """This script as ``--as-server`` (attach mode starts it; launch mode has tuiapp start it)."""

    def __init__(self, work: Path, log: Path | None, seed: int) -> None:
        self.port = free_port()
        self.notes = work / "notes.jsonl"
        self.argv = [sys.executable, str(Path(__file__).resolve()), "--as-server", "--port", str(self.port),
                     "--notes", str(self.notes), "--seed", str(seed), *(["--log", str(log)] if log else [])]

    def read(self) -> tuple[list[float], list[tuple[str, float]]]:
        done_t: list[float] = []
        written: list[tuple[str, float]] = []
        if self.notes.exists():
            for line in self.notes.read_text().splitlines():
                note = json.loads(line)
                if "done" in note:
                    done_t.append(note["done"])
                else:
                    written.append((note["tag"], note["t"]))
        return done_t, written


def stats(ages_s: list[float]) -> str:
    if not ages_s:
        return "none seen"
    ms = sorted(a * 1000 for a in ages_s)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return f"n={len(ms):3d}  p50 {statistics.median(ms):6.0f} ms  p90 {p90:6.0f} ms  max {ms[-1]:6.0f} ms"


def screen_times(chunks: list[tuple[float, bytes]], size: tuple[int, int], tags: set[str]) -> tuple[dict, dict]:
    """Feed the pty's bytes through pyte; when each run and each tag first showed."""
    import pyte

    screen = pyte.Screen(*size)
    stream = pyte.ByteStream(screen)
    runs_shown: dict[int, float] = {}
    tags_shown: dict[str, float] = {}
    counted = 0
    n_re = re.compile(r"\bn=(\d+)\b")
    for t, data in chunks:
        stream.feed(data)
        lines = screen.display
        for line in lines:
            if "mean" in line and (m := n_re.search(line)):
                n = int(m.group(1))
                for k in range(counted, n):  # runs 0..n-1 are now counted on screen
                    runs_shown.setdefault(k, t)
                counted = max(counted, n)
                break
        col = next((line.find("─ alerts") for line in lines if "─ alerts" in line), -1)
        if col >= 0:
            region = "\n".join(line[col:] for line in lines)
            for tag in tags - tags_shown.keys():
                if tag in region:
                    tags_shown[tag] = t
    return runs_shown, tags_shown


def printed_times(chunks: list[tuple[float, bytes]]) -> tuple[dict, dict]:
    """The headless printer's output: when each run and each tag was printed (a line's time
    is that of the read that brought its end)."""
    runs_shown: dict[int, float] = {}
    tags_shown: dict[str, float] = {}
    run_re = re.compile(r"\brun +#(\d+) ")
    tag_re = re.compile(r"\bALERT\b.*\b(fr[a-z]+)\b")
    part = ""
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a read may end inside a character
    for t, data in chunks:
        *lines, part = (part + decode(data)).split("\n")
        for line in lines:
            if m := run_re.search(line):
                runs_shown.setdefault(int(m.group(1)), t)
            elif m := tag_re.search(line):
                tags_shown.setdefault(m.group(1), t)
    return runs_shown, tags_shown


def session(mode: str, size: tuple[int, int] | None, seconds: float, seed: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="app_fresh_"))
    log = work / "server.log"
    server = Server(work, log if mode == "attach" else None, seed)
    server_proc = None
    headless = ["--headless"] if size is None else []
    if mode == "attach":
        log.touch()
        server_proc = subprocess.Popen(server.argv, stdin=subprocess.DEVNULL)
        argv = [*app_cpu.TUIAPP, "attach", f"http://127.0.0.1:{server.port}", "--telemetry", "sim", "--log", str(log),
                *headless]
    else:
        argv = [*app_cpu.TUIAPP, "launch", "--telemetry", "sim", "--no-preflight", "--log", str(log), *headless, "--",
                *server.argv]
    try:
        if server_proc is not None:
            wait_ready(server.port, server_proc)
        app = app_cpu.App(argv, size, work, keep_output=True)  # PYTHONPATH from app_cpu.TREE
        try:
            time.sleep(seconds)
        finally:
            app.stop()
        done_t, written = server.read()
        chunks = app.drain.chunks
        if size is None:
            runs_shown, tags_shown = printed_times(chunks)
        else:
            runs_shown, tags_shown = screen_times(chunks, size, {tag for tag, _ in written})
    finally:
        if server_proc is not None:
            server_proc.terminate()
            server_proc.wait(15)
        shutil.rmtree(work, ignore_errors=True)
    tok_ages = [t - done_t[WARMUP_REQUESTS + k] for k, t in sorted(runs_shown.items())
                if WARMUP_REQUESTS + k < len(done_t)]
    t_end = max((t for t, _ in chunks), default=0.0)
    alert_ages = [tags_shown[tag] - t for tag, t in written if tag in tags_shown]
    unseen = [tag for tag, t in written if tag not in tags_shown and t < t_end - 1.0]
    tag = "before " if app_cpu.TREE is not None else ("after  " if app_cpu.BASELINE is not None else "")
    what = f"{tag}{mode} " + (f"TUI {size[0]}x{size[1]}" if size else "headless")
    return {"what": what, "tok_age_s": tok_ages, "alert_age_s": alert_ages, "runs": len(runs_shown),
            "requests_done": len(done_t), "incidents": len(written), "alerts_not_shown": len(unseen)}


def healthy(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def wait_ready(port: int, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"app_freshness: the server exited with {proc.returncode} before it was ready")
        if healthy(port):
            return
        time.sleep(0.1)
    sys.exit(f"app_freshness: the server was not ready after {timeout_s:g} s")


def show(row: dict) -> None:
    over = sum(a > 1.0 for a in row["tok_age_s"])
    late = sum(a > 0.1 for a in row["alert_age_s"])
    print(f"  {row['what']:<28} tok/s age  {stats(row['tok_age_s'])}  (> 1 s: {over})", flush=True)
    print(f"  {'':<28} alert age  {stats(row['alert_age_s'])}  (> 100 ms: {late}; "
          f"{row['incidents']} tracebacks, not shown: {row['alerts_not_shown']})", flush=True)
    if any(a < 0 for a in row["tok_age_s"]):
        print("  (a negative tok/s age: a run shown before its request ended; the pairing is off)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each session")
    ap.add_argument("--size", default="160x48", help="the TUI's terminal size (the alerts panel must be visible)")
    ap.add_argument("--modes", default="launch,attach", help="launch, attach or both")
    ap.add_argument("--skip-headless", action="store_true")
    ap.add_argument("--skip-tui", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baseline-tree", metavar="DIR", help="a checkout of older code: each session runs "
                    "with its tuiapp first, then with this tree's")
    ap.add_argument("--json", metavar="FILE", help="also write the ages as JSON")
    ap.add_argument("--as-server", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--notes", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.as_server:
        serve(args.port, args.notes, args.log, args.seed)
        return
    try:
        import pyte  # noqa: F401
    except ImportError:
        sys.exit("app_freshness: needs pyte to read the screen (pip install -e '.[bench]')")
    try:
        cols, rows = (int(x) for x in args.size.lower().split("x"))
    except ValueError:
        sys.exit(f"app_freshness: --size {args.size!r} is not COLSxROWS")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"launch", "attach"}:
        sys.exit(f"app_freshness: --modes {args.modes!r}: launch, attach or both")
    sizes = [*([] if args.skip_tui else [(cols, rows)]), *([] if args.skip_headless else [None])]
    trees = [None]
    if args.baseline_tree:
        app_cpu.BASELINE = Path(args.baseline_tree).resolve()
        trees = [app_cpu.BASELINE, None]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
          f"{args.seconds:g} s per session")
    results: list[dict] = []
    try:
        for mode in modes:
            for size in sizes:
                for tree in trees:
                    app_cpu.TREE = tree
                    results.append(session(mode, size, args.seconds, args.seed))
                    show(results[-1])
    finally:
        app_cpu.TREE = None
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

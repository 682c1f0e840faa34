"""A fake SGLang server for launcher tests: prints SGLang-like log lines, optionally
serves /health, fails, floods, leaks secrets into its log, or refuses to die.

Every process it starts appends "pid pgid role" to --pid-file, so tests can check that
none survives.
"""

import argparse
import http.server
import os
import signal
import subprocess
import sys
import threading
import time

READY = "The server is fired up and ready to roll!"


def log(msg: str, prefix: str = "") -> None:
    ts = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stderr.write(f"[{ts}{prefix}] {msg}\n")
    sys.stderr.flush()


def record_pid(path: str | None, role: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()} {os.getpgid(0)} {role}\n")


def ignore_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def serve_health(host: str, port: int, healthy_after_s: float) -> None:
    start = time.monotonic()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            ok = self.path == "/health" and time.monotonic() - start >= healthy_after_s
            self.send_response(200 if ok else 503)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--api-key")
    ap.add_argument("--pid-file")
    ap.add_argument("--ranks", type=int, default=0, help="child 'scheduler' processes")
    ap.add_argument("--ready-after", type=float, default=0.2)
    ap.add_argument("--no-ready-line", action="store_true")
    ap.add_argument("--health-after", type=float, help="serve /health: 503, then 200 after this many s")
    ap.add_argument("--fail-after", type=float, help="crash while starting with a traceback")
    ap.add_argument("--echo-secrets", action="store_true")
    ap.add_argument("--flood", type=int, default=0, help="print this many Decode lines at once")
    ap.add_argument("--flood-done-file")
    ap.add_argument("--stubborn", action="store_true", help="ignore SIGINT/SIGTERM, with grandchildren that do too")
    ap.add_argument("--run-for", type=float, default=60.0)
    ap.add_argument("--role", default="server")
    ap.add_argument("--stop-error", action="store_true",
                    help="on SIGINT or SIGTERM, die with a KeyError traceback (an import the signal cut short)")
    args = ap.parse_args()
    if args.stop_error:
        def cut_short(_sig, _frame):
            log("Traceback (most recent call last):\n"
                '  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load\n'
                "KeyError: 'sglang.srt.managers.scheduler'")
            sys.exit(1)

        signal.signal(signal.SIGINT, cut_short)
        signal.signal(signal.SIGTERM, cut_short)  # (scancel's)

    if args.role != "server":  # a child: a rank or a stubborn helper
        if args.stubborn:
            ignore_signals()
        if args.role == "escaped":
            os.setsid()  # leaves the server's process group, like a daemonising helper
        record_pid(args.pid_file, args.role)
        while True:
            time.sleep(0.2)

    if args.stubborn:
        ignore_signals()
    record_pid(args.pid_file, "server")
    me = [sys.executable, os.path.abspath(__file__), "--pid-file", args.pid_file or ""]
    kids = [subprocess.Popen([*me, "--role", f"rank{i}"]) for i in range(args.ranks)]
    if args.stubborn:
        kids += [subprocess.Popen([*me, "--role", role, "--stubborn"]) for role in ("helper", "escaped")]

    if args.pid_file:  # wait until every child has recorded itself, so tests can find them all
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(args.pid_file) as f:
                if len(f.read().splitlines()) >= 1 + len(kids):
                    break
            time.sleep(0.02)
    log(f"server_args=ServerArgs(model_path='fake/model', tp_size=2, port={args.port}, api_key={args.api_key!r})")
    if args.echo_secrets:
        log(f"environment HF_TOKEN={os.environ.get('HF_TOKEN')}")
    for i in range(args.ranks):
        log("Load weight begin. avail mem=94.10 GB", prefix=f" TP{i}")
    if args.health_after is not None:
        serve_health(args.host, args.port, args.health_after)
    if args.fail_after is not None:
        time.sleep(args.fail_after)
        log("Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sglang/srt/managers/scheduler.py", line 6370, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            "AssertionError: fake rank failure for the test", prefix=" TP1")
        log("Received sigquit from a child process. It usually means the child failed.")
        return 3
    time.sleep(args.ready_after)
    if not args.no_ready_line:
        log(READY)
    if args.flood:
        line = ("Decode batch, #running-req: 1, #token: 1234, token usage: 0.01, accept len: 3.12, "
                "accept rate: 0.71, cuda graph: True, gen throughput (token/s): 89.52, #queue-req: 0")
        out = sys.stderr
        for i in range(args.flood):
            out.write(f"[2026-01-01 12:00:00 TP{i % 8}] {line} n={i}\n")
        out.flush()
        if args.flood_done_file:
            with open(args.flood_done_file, "w") as f:
                f.write(repr(time.time()))
    deadline = time.monotonic() + args.run_for
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
    except KeyboardInterrupt:
        log("Received SIGINT, shutting down")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

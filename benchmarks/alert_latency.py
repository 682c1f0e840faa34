"""Write-to-alert latency of the log watcher at a high log rate.

A writer process writes an interleaved 8-rank SGLang log at --rate lines/s (Decode and
Prefill lines, access-log lines, logged requests with decoy words, NCCL INFO, tqdm bars)
into a file (--mode file: follow_file tails it) or a pipe (--mode pipe: LogWatcher.pump
reads it); --mode log and --mode log-cmd go through attach's log sources (``--log
node1=FILE``, ``--log-cmd 'node1=tail -n0 -F FILE'``: a labelled node, so alerts also
pass the cross-node merger). Now and then it writes a failure: the same traceback from 1-8 ranks a few
milliseconds apart, with a tag in its exception line, and notes when each rank's record
was written. The watcher publishes to an EventBus; a subscriber notes when each rank
shows up in an Alert. Latency = alert on the bus - record written, per (incident, rank);
"first" is the first alert of each incident, "all" includes the rank-list updates.

    .venv/bin/python benchmarks/alert_latency.py [--mode file|pipe|log|log-cmd] [--rate 10000] [--seconds 10]
    .venv/bin/python benchmarks/alert_latency.py --capacity 200000   # the watcher alone, flat out
    .venv/bin/python benchmarks/alert_latency.py --corpus 2          # the same over tests/data's real logs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

FAILURES = [
    "AssertionError: bench-{tag} hidden_states.shape[0] > max_num_tokens",
    "KeyError: 'bench-{tag}'",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (bench-{tag})",
    "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, unhandled cuda error bench-{tag}",
    "ValueError: bench-{tag} invalid sampling params",
]
TAG_RE = re.compile(r"bench-([a-z]+)")


def tag_of(n: int) -> str:
    s = ""
    n += 26 * 26
    while n:
        n, r = divmod(n, 26)
        s = chr(97 + r) + s
    return s


def ts(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def normal_line(rng: random.Random, t: float, i: int) -> str:
    r = rng.randrange(8)
    k = rng.randrange(10)
    stamp = ts(t)
    if k < 3:
        return (f"[{stamp} TP{r}] Decode batch, #running-req: 32, #token: {9000 + i % 977}, token usage: 0.03, "
                f"accept len: 3.{i % 90:02d}, accept rate: 0.7{i % 10}, cuda graph: True, gen throughput (token/s): "
                f"{2800 + i % 300}.41, #queue-req: {i % 4}\n")
    if k < 5:
        return (f"[{stamp} TP{r}] Prefill batch, #new-seq: 1, #new-token: 31, #cached-token: 0, token usage: 0.03, "
                f"#running-req: 31, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 4100.00\n")
    if k < 7:
        return f"[{stamp}] INFO:     127.0.0.1:{40000 + i % 9999} - \"POST /generate HTTP/1.1\" 200 OK\n"
    if k < 9:
        return (f"[{stamp}] Receive: obj=GenerateReqInput(rid='{i:016x}', text='Why does my GPU run out of memory? "
                f"AssertionError KeyError: 12', sampling_params={{'max_new_tokens': 256}}, stream=True)\n")
    if rng.random() < 0.5:
        return f"gpu-node-1:{4100 + r}:{4180 + r} [{r}] NCCL INFO Channel 0{r}/0 : {r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] via SHM/direct/direct\n"
    return f"\rCapturing batches (bs={i % 128} avail_mem=1.02 GB):  50%|█████     | 26/52\rCapturing batches: 100%|██████████| 52/52\n"


def failure_record(t: float, rank: int, final: str) -> str:
    return (f"[{ts(t)} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 6367, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1432, in event_loop_overlap\n'
            "    batch_result = self.run_batch(batch)\n"
            f"{final}\n")


def writer(out_path: str, notes_path: str, rate: float, seconds: float, incidents_per_s: float, seed: int) -> None:
    rng = random.Random(seed)
    fd = 1 if out_path == "-" else os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    notes: list[dict] = []
    queue: list[tuple[str, int]] = []  # (tag, rank) records still to write
    finals: dict[str, str] = {}
    t0 = time.time()
    next_incident = t0 + 0.3
    last_nccl = 0.0
    written = 0
    n_incident = 0
    tick_s = 0.002
    while True:
        now = time.time()
        if now - t0 >= seconds:
            break
        if now >= next_incident:
            tag = tag_of(n_incident)
            template = FAILURES[n_incident % len(FAILURES)]
            if "NCCL" in template:
                # NCCL lines within the group window are one incident by design: space them
                if now - last_nccl < 3.0:
                    template = FAILURES[0]
                else:
                    last_nccl = now
            finals[tag] = template.format(tag=tag)
            ranks = rng.sample(range(8), rng.randrange(1, 9))
            queue.extend((tag, r) for r in ranks)
            n_incident += 1
            next_incident = now + rng.expovariate(incidents_per_s)
        due = int((now - t0) * rate) - written
        parts: list[str] = []
        pending: list[tuple[str, int]] = []
        for _ in range(max(due, 0)):
            if queue and rng.random() < 0.05:  # ranks' tracebacks land a few ms apart
                tag, r = queue.pop(0)
                rec = failure_record(now, r, finals[tag])
                parts.append(rec)
                pending.append((tag, r))
                written += rec.count("\n")
            else:
                parts.append(normal_line(rng, now, written))
                written += 1
        if parts:
            data = "".join(parts).encode()
            t_write = time.time()
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            notes.extend({"tag": tag, "rank": r, "t": t_write} for tag, r in pending)
        time.sleep(tick_s)
    for tag, r in queue:  # flush what is left so every incident is complete
        rec = failure_record(time.time(), r, finals[tag]).encode()
        t_write = time.time()
        os.write(fd, rec)
        notes.append({"tag": tag, "rank": r, "t": t_write})
        written += 6
    elapsed = time.time() - t0
    if fd != 1:
        os.close(fd)
    Path(notes_path).write_text(json.dumps({"notes": notes, "lines": written, "seconds": elapsed}))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


async def measure(args: argparse.Namespace) -> dict:
    from tuiapp.bus import EventBus
    from tuiapp.events import Alert
    from tuiapp.logwatch.follow import follow_file
    from tuiapp.logwatch.watcher import LogWatcher

    bus = EventBus()
    sub = bus.subscribe("bench", maxlen=1_000_000)
    seen: dict[tuple[str, int], float] = {}
    first_alert: dict[str, float] = {}
    alerts = 0

    async def consume() -> None:
        nonlocal alerts
        async for ev in sub:
            if not isinstance(ev, Alert):
                continue
            alerts += 1
            now = time.time()
            m = TAG_RE.search(ev.message)
            if not m:
                continue
            first_alert.setdefault(m.group(1), now)
            for r in ev.ranks:
                seen.setdefault((m.group(1), r), now)

    consumer = asyncio.create_task(consume())
    tmp = Path(tempfile.mkdtemp(prefix="alert_latency_"))
    notes_path = tmp / "notes.json"
    cmd = [sys.executable, __file__, "--writer", "", "--notes", str(notes_path), "--rate", str(args.rate),
           "--seconds", str(args.seconds), "--incidents-per-s", str(args.incidents_per_s), "--seed", str(args.seed)]
    watcher = None
    if args.mode in ("log", "log-cmd"):
        from tuiapp.logwatch.sources import LogSource, log_source_tasks

        log_path = tmp / "server.log"
        log_path.write_bytes(b"")
        cmd[3] = str(log_path)
        stop = asyncio.Event()
        src = (LogSource("file", str(log_path), "node1") if args.mode == "log"
               else LogSource("cmd", f"tail -n0 -F {log_path}", "node1"))
        (task,) = log_source_tasks([src], bus.publish, stop)
        follower = asyncio.create_task(task())
        await asyncio.sleep(0.5)  # tail has started and is at the end of the (empty) file
        proc = await asyncio.create_subprocess_exec(*cmd)
        await proc.wait()
        await asyncio.sleep(0.5)
        stop.set()
        await follower
    elif args.mode == "file":
        log_path = tmp / "server.log"
        cmd[3] = str(log_path)
        stop = asyncio.Event()
        follower = asyncio.create_task(follow_file(log_path, bus.publish, stop=stop))
        proc = await asyncio.create_subprocess_exec(*cmd)
        await proc.wait()
        await asyncio.sleep(0.5)
        stop.set()
        watcher = await follower
    else:
        cmd[3] = "-"
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
        watcher = LogWatcher(bus.publish)
        assert proc.stdout is not None
        await watcher.pump(proc.stdout)
        await proc.wait()
    await asyncio.sleep(0.1)
    bus.close()
    await consumer
    info = json.loads(notes_path.read_text())
    first_write: dict[str, float] = {}
    all_lat: list[float] = []
    missing = 0
    for n in info["notes"]:
        first_write.setdefault(n["tag"], n["t"])
        got = seen.get((n["tag"], n["rank"]))
        if got is None:
            missing += 1
        else:
            all_lat.append(got - n["t"])
    first_lat = [first_alert[t] - w for t, w in first_write.items() if t in first_alert]
    ms = 1000.0
    return {
        "mode": args.mode,
        "lines_written": info["lines"],
        "lines_per_s_written": round(info["lines"] / info["seconds"]),
        "lines_watched": watcher.lines if watcher else None,
        "incidents": len(first_write),
        "rank_records": len(info["notes"]),
        "alerts_on_bus": alerts,
        "missing_rank_alerts": missing,
        "first_alert_ms": {"p50": round(pct(first_lat, 50) * ms, 1), "p99": round(pct(first_lat, 99) * ms, 1),
                           "max": round(max(first_lat) * ms, 1)} if first_lat else None,
        "all_ranks_ms": {"p50": round(statistics.median(all_lat) * ms, 1), "p99": round(pct(all_lat, 99) * ms, 1),
                         "max": round(max(all_lat) * ms, 1)} if all_lat else None,
    }


def capacity(lines: int, seed: int) -> dict:
    """How many lines/s one watcher digests when it never waits for the writer."""
    rng = random.Random(seed)
    t = time.time()
    parts = []
    for i in range(lines):
        parts.append(normal_line(rng, t, i))
        if i % 1000 == 999:
            parts.append(failure_record(t, rng.randrange(8), FAILURES[i % len(FAILURES)].format(tag=tag_of(i))))
    return watcher_alone("".join(parts).encode())


def corpus_capacity(times: int) -> dict:
    """The watcher alone over the real logs under tests/data (every labelled corpus, failure-dense:
    the lines that reach the generic and last-resort layers), ``times`` over."""
    root = Path(__file__).resolve().parent.parent / "tests" / "data"
    return watcher_alone(b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in sorted(root.glob("logs*/*.log"))) * times)


def watcher_alone(data: bytes) -> dict:
    """Lines a second one watcher digests when it never waits for a writer."""
    from tuiapp.bus import EventBus
    from tuiapp.logwatch.watcher import LogWatcher

    bus = EventBus()
    sub = bus.subscribe("bench", maxlen=10_000)
    w = LogWatcher(bus.publish)
    t0 = time.perf_counter()
    for i in range(0, len(data), 1 << 16):
        w.feed(data[i:i + (1 << 16)])
        sub.drain()
    w.flush()
    dt = time.perf_counter() - t0
    return {"lines": w.lines, "seconds": round(dt, 3), "lines_per_s": round(w.lines / dt), "mb_per_s": round(len(data) / dt / 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["file", "pipe", "log", "log-cmd"], default="file")
    ap.add_argument("--rate", type=float, default=10_000, help="log lines per second")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--incidents-per-s", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--capacity", type=int, metavar="LINES", help="instead: time the watcher alone over LINES lines")
    ap.add_argument("--corpus", type=int, metavar="TIMES",
                    help="instead: time the watcher alone over the real logs under tests/data, TIMES over")
    ap.add_argument("--writer", help=argparse.SUPPRESS)
    ap.add_argument("--notes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.writer is not None:
        writer(args.writer, args.notes, args.rate, args.seconds, args.incidents_per_s, args.seed)
        return 0
    if args.capacity or args.corpus:
        c = capacity(args.capacity, args.seed) if args.capacity else corpus_capacity(args.corpus)
        print(json.dumps(c) if args.json else
              f"watcher alone: {c['lines']} lines in {c['seconds']} s = {c['lines_per_s']} lines/s ({c['mb_per_s']} MB/s)")
        return 0
    r = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"mode={r['mode']}  lines/s written={r['lines_per_s_written']}  lines written={r['lines_written']}"
          f"  watched={r['lines_watched']}")
    print(f"incidents={r['incidents']}  rank records={r['rank_records']}  alerts on bus={r['alerts_on_bus']}"
          f"  missing={r['missing_rank_alerts']}")
    for name in ("first_alert_ms", "all_ranks_ms"):
        v = r[name]
        if v:
            print(f"{name:<15} p50={v['p50']:.1f}  p99={v['p99']:.1f}  max={v['max']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

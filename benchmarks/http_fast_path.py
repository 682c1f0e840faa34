"""The plain-http fast path, this tree against another revision, in one run (a ratio: the box is noisy).

    .venv/bin/python benchmarks/http_fast_path.py [--base REV] [--rounds 3]

REV (default: the merge base with ``main``) is exported with ``git archive`` and each tree's
``tuiapp`` is put first on the path of its own subprocesses. Two figures per tree, rounds
alternating base and head (ABBA) so drift hits both alike, medians printed with head/base:

* one client core: bench_cost.py's --core-only measurement (our benchmark loop pinned to one
  CPU, /generate, concurrency 64, 256 x 256 tokens, 1 token per chunk, against
  tuiapp.sim.testserver on the other CPU): tokens per CPU-second;
* the chunked parser alone: 20,000 one-event SSE chunks through the transport's decoder in
  64 KiB reads, nanoseconds per chunk (best of 30 in each round: the box's load inflates the rest);
* short requests: the same loop at concurrency 16, 3,200 requests of 2 tokens: CPU microseconds
  per request (what each request costs the client beside its tokens: sending, the watchdog,
  the response's head and end, its event);
* a poll: the session's poll client (``async_client``: the lean transport and its prebuilt
  request) GETting the test server's /metrics 3,000 times: CPU microseconds per poll.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_cost import INNER  # noqa: E402
from bench_peers import start_fake  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

POLL = """
import asyncio, json, resource, sys
from tuiapp.common.http_clients import async_client
url, n = sys.argv[1] + "/metrics", int(sys.argv[2])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
async def main():
    async with async_client(url) as client:
        for _ in range(50):
            await client.get(url)
        c0 = cpu()
        for _ in range(n):
            (await client.get(url)).raise_for_status()
        return cpu() - c0
print(json.dumps({"cpu_s": asyncio.run(main()), "polls": n}))
"""


PARSE = """
import asyncio, json, time
from tuiapp.common.lean_transport import _Body
# one SSE event per chunk, as a server streaming one token per chunk writes them
event = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":" tok"}}]}\\n\\n'
wire = (b"%x\\r\\n" % len(event) + event + b"\\r\\n") * 20000 + b"0\\r\\n\\r\\n"
class Fed:
    def __init__(self):
        self.buf, self.closed, self.left = bytearray(), False, [wire[i:i + 65536] for i in range(0, len(wire), 65536)]
        self.reads = 0
    async def more(self):
        self.buf += self.left.pop(0)
        self.reads += 1
    def set_defer(self, *a, **k):
        pass
async def once():
    conn = Fed()
    t0 = time.perf_counter_ns()
    async for _ in _Body(None, ("h", 80), conn, None, True, False)._dechunk(conn):
        pass
    return (time.perf_counter_ns() - t0) / 20000
print(json.dumps({"ns_per_chunk": min(asyncio.run(once()) for _ in range(30))}))
"""


def export(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "tuiapp"], check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    return into


def run_in(tree: Path, code: str, *argv: str, cpu: int | None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-c", code, *argv]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tree, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {proc.stderr[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", help="revision to compare with (default: merge-base HEAD main)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    base = args.base or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                       capture_output=True, text=True).stdout.strip()
    ncpu = os.cpu_count() or 1
    client_cpu = ncpu - 1 if ncpu > 1 else None
    srv = start_fake(step_ms=1, tokens_per_chunk=1, cpu=0 if ncpu > 1 else None)
    trees = {"base": export(base, Path(tempfile.mkdtemp(prefix="http_fast_path_"))), "head": ROOT}
    tok: dict[str, list[float]] = {"base": [], "head": []}
    poll: dict[str, list[float]] = {"base": [], "head": []}
    parse: dict[str, list[float]] = {"base": [], "head": []}
    short: dict[str, list[float]] = {"base": [], "head": []}
    try:
        for i in range(args.rounds):
            order = list(trees.items())
            for name, tree in (order if i % 2 == 0 else order[::-1]):  # ABBA: no tree always goes first
                r = run_in(tree, INNER, srv.url, "generate", "64", "256", "256", cpu=client_cpu)
                if r["errors"]:
                    raise SystemExit(f"{name}: {r['errors']} request errors")
                tok[name].append(r["tokens"] / r["cpu_s"])
                r = run_in(tree, INNER, srv.url, "generate", "16", "3200", "2", cpu=client_cpu)
                if r["errors"]:
                    raise SystemExit(f"{name}: {r['errors']} request errors")
                short[name].append(r["cpu_s"] / 3200 * 1e6)
                r = run_in(tree, POLL, srv.url, "3000", cpu=client_cpu)
                poll[name].append(r["cpu_s"] / r["polls"] * 1e6)
                parse[name].append(run_in(tree, PARSE, cpu=client_cpu)["ns_per_chunk"])
                print(f"{name}: {tok[name][-1]:,.0f} tokens per CPU-second, {poll[name][-1]:.0f} us CPU per poll, "
                      f"{parse[name][-1]:.0f} ns per chunk parsed, {short[name][-1]:.0f} us CPU per short request", flush=True)
    finally:
        srv.stop()
    t_base, t_head = statistics.median(tok["base"]), statistics.median(tok["head"])
    p_base, p_head = statistics.median(poll["base"]), statistics.median(poll["head"])
    print(f"\nbase {base[:10]} vs head, medians of {args.rounds} ABBA rounds:")
    print(f"  one client core: {t_base:,.0f} -> {t_head:,.0f} tokens per CPU-second (head/base {t_head / t_base:.3f})")
    print(f"  poll:            {p_base:.0f} -> {p_head:.0f} us CPU per poll (head/base {p_head / p_base:.3f})")
    s_base, s_head = statistics.median(short["base"]), statistics.median(short["head"])
    print(f"  short request:   {s_base:.0f} -> {s_head:.0f} us CPU per request (head/base {s_head / s_base:.3f})")
    c_base, c_head = min(parse["base"]), min(parse["head"])
    print(f"  chunk parse:     {c_base:.0f} -> {c_head:.0f} ns per chunk, best of all rounds (head/base {c_head / c_base:.3f})")
    pairs = [h / b for b, h in zip(tok["base"], tok["head"], strict=True)]
    print(f"  one client core, geometric mean of the rounds' head/base: {statistics.geometric_mean(pairs):.3f}")


if __name__ == "__main__":
    main()

"""How the real SGLang server splits a burst into prefill batches (the simulator's hand-over stage).

    .venv/bin/python benchmarks/real_burst_split.py [--venv /tmp/tuiapp-sglang-cpu/venv] [--burst 8] [--waves 5]

Opens ``--burst`` keep-alive connections, then, ``--waves`` times, writes one /generate
stream request on each within one event-loop turn, and prints the spread of the sends, each
request's TTFT and the server log's ``Prefill batch ... #new-seq: N`` counts for that wave.
The real 0.5.23 CPU server prefills the burst's head alone and the rest after it (its
tokenizer manager hands requests to the scheduler one at a time): docs/simulator.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

import load_fidelity as lf  # noqa: E402
from real_sglang import RealServer  # noqa: E402

from tuiapp.server.ports import free_port  # noqa: E402


async def waves(server: RealServer, burst: int, count: int) -> None:
    u = urlsplit(server.url)
    lf._IDLE.extend([await lf._connect(u.hostname, u.port) for _ in range(burst)])
    for wave in range(count):
        mark = len(server.log)
        prompts = [lf.PROMPTS[(wave * burst + i) % len(lf.PROMPTS)] for i in range(burst)]
        res = await asyncio.gather(*(lf.one_request(u.hostname, u.port, p, 32) for p in prompts))
        sends = [r["t0"] for r in res]
        await asyncio.sleep(0.5)  # the log lines are written
        batches = re.findall(r"Prefill batch.*?#new-seq: (\d+)", server.log[mark:])
        print(f"wave {wave}: sends within {(max(sends) - min(sends)) * 1000:.2f} ms; prefill batches "
              f"{' + '.join(batches)}; TTFT ms {sorted(round(r['ttft_s'] * 1000, 1) for r in res)}", flush=True)
    for conn in lf._IDLE:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/tuiapp-sglang-cpu/venv")
    ap.add_argument("--burst", type=int, default=8)
    ap.add_argument("--waves", type=int, default=5)
    args = ap.parse_args()
    server = RealServer(Path(args.venv), Path(tempfile.mkdtemp(prefix="burst_")) / "real.log", free_port())
    try:
        server.wait_ready()
        asyncio.run(waves(server, args.burst, args.waves))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Streaming capacity of the simulator: how many streamed tokens/s one server process emits.

The server runs with a tiny modelled step (--sim-step-ms) so it is CPU-bound; a separate
client process (raw asyncio sockets, counting SSE events without parsing JSON) keeps N
keep-alive connections busy with /generate streams (cumulative text and output_ids, as
SGLang sends). Prints tokens/s delivered and tokens per second of server CPU time (the
server is one asyncio thread, so this is "on one core" even on a busy machine).

    python benchmarks/sim_capacity.py [--streams 64] [--seconds 8] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import time

import psutil

from tuiapp.sim.process import SimProcess


def client_main(port: int, streams: int, seconds: float, max_new: int, out) -> None:
    async def worker(stop_t: float, counts: list[int]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = json.dumps({"text": "capacity test prompt with a few words", "stream": True,
                           "sampling_params": {"max_new_tokens": max_new, "ignore_eos": True}}).encode()
        head = (f"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        while time.monotonic() < stop_t:
            writer.write(head + body)
            buf = b""
            while not buf.endswith(b"0\r\n\r\n"):
                data = await reader.read(1 << 16)
                if not data:
                    return
                counts[0] += data.count(b"data: {")
                buf = buf[-8:] + data
            counts[1] += 1
        writer.close()

    async def run() -> None:
        counts = [0, 0]
        t0 = time.monotonic()
        await asyncio.gather(*(worker(t0 + seconds, counts) for _ in range(streams)))
        out.put((counts[0], counts[1], time.monotonic() - t0))

    asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=0.5)
    args = ap.parse_args()
    with SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--sim-step-ms", str(args.step_ms),
                     "--max-running-requests", "4096"], speed=50) as sim:
        sim.wait_ready()
        proc = psutil.Process(sim.proc.pid)
        q: mp.Queue = mp.Queue()
        client = mp.Process(target=client_main, args=(sim.port, args.streams, args.seconds, args.max_new_tokens, q))
        cpu0 = sum(proc.cpu_times()[:2])
        client.start()
        cproc = psutil.Process(client.pid)
        client_cpu_s = 0.0
        while q.empty():
            try:
                client_cpu_s = sum(cproc.cpu_times()[:2])
            except psutil.Error:
                break
            time.sleep(0.2)
        chunks, requests, wall_s = q.get()
        cpu_s = sum(proc.cpu_times()[:2]) - cpu0
        client.join()
    tok_s = chunks / wall_s
    print(f"streams={args.streams} max_new_tokens={args.max_new_tokens} step_ms={args.step_ms} wall_s={wall_s:.2f}")
    print(f"requests={requests} streamed_tokens={chunks} (one SSE event per token)")
    print(f"delivered: {tok_s:,.0f} tokens/s; server CPU {cpu_s:.2f} s = {100 * cpu_s / wall_s:.0f}% of one core")
    print(f"client CPU {client_cpu_s:.2f} s = {100 * client_cpu_s / wall_s:.0f}% of one core; load average {psutil.getloadavg()[0]:.1f}")
    print(f"capacity: {chunks / cpu_s:,.0f} streamed tokens per server-CPU-second (one core)")


if __name__ == "__main__":
    main()

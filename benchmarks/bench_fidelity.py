"""Fidelity: do our numbers match the truth, and the best peer, at known pacing?

    .venv/bin/python benchmarks/bench_fidelity.py [--server fake|sim|both] [--no-peers]

A. Known pacing. Against tuiapp.sim.testserver (exact absolute schedule: a chunk every
   10 ms carrying k tokens) and, when it exists, the simulator (tuiapp.sim.server, whose
   expected single-stream tok/s comes from tuiapp.sim.model.expected_tok_s): 5 runs of
   one 256-token request on /generate at concurrency 1, as the campaign's script did.
   Target: decode tok/s within 0.5% of the truth; accept length exactly the server's
   (token-weighted sum of completion tokens / sum of spec_verify_ct), and the client-side
   tokens-per-chunk cross-check equal to the paced chunk size.
B. Side by side with AIPerf (and genai-bench when installed) on the same server,
   /v1/chat/completions, 8 requests x 256 tokens at concurrency 1, 1-token and 3-token
   chunks. Target: our decode tok/s and ITL within 2% of AIPerf's
   (output_token_throughput_per_user and inter_token_latency, both per-token).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_peers import SIM_MODEL, run_aiperf, run_genai, sim_available, start_fake, start_sim  # noqa: E402

from tuiapp.bench.loop import BenchLoop  # noqa: E402
from tuiapp.bench.settings import BenchSettings  # noqa: E402
from tuiapp.events import RequestDone  # noqa: E402

STEP_MS = 10.0
TOKENS = 256


def ours(url: str, *, api: str, runs: int, tokens: int = TOKENS) -> tuple[BenchLoop, list[RequestDone]]:
    events: list = []
    loop = BenchLoop(events.append, url, BenchSettings(api=api, runs=runs, max_new_tokens=tokens, warmup_requests=1,
                                                       flush_cache=True, input_tokens=32, workload="synthetic"))
    asyncio.run(loop.run())
    return loop, [e for e in events if isinstance(e, RequestDone)]


def pct(got: float, want: float) -> float:
    return (got - want) / want * 100.0


def part_a_fake() -> None:
    print("A. known pacing, tuiapp.sim.testserver (10 ms per chunk), /generate, 5 runs x 1 x 256 tokens")
    for k in (1, 3):
        srv = start_fake(step_ms=STEP_MS, tokens_per_chunk=k, spec=k > 1)
        try:
            loop, reqs = ours(srv.url, api="generate", runs=5)
        finally:
            srv.stop()
        truth = k / (STEP_MS / 1000)
        s = loop.summary()
        verify = 1 + math.ceil((TOKENS - 1) / k)
        accept = [r.accept_length for r in loop.results]
        tpc = {r.tokens_per_chunk for r in reqs}
        print(f"  k={k}: decode {s['mean_decode_tok_s']:.3f} tok/s (sd {s['sd_decode_tok_s']:.3f}) vs truth {truth:.1f}"
              f" -> error {pct(s['mean_decode_tok_s'], truth):+.3f}%  "
              f"ITL {sum(r.tpot_s for r in reqs) / len(reqs) * 1000:.4f} ms vs {STEP_MS / k:.4f}")
        if k > 1:
            exact = all(a == TOKENS / verify for a in accept)
            print(f"       accept length per run {accept[0]:.6f} vs server {TOKENS}/{verify} = {TOKENS / verify:.6f}"
                  f" -> {'exact' if exact else 'MISMATCH'}; tokens/chunk {sorted(tpc)} vs paced {k}")


def part_a_sim() -> None:
    from tuiapp.sim.model import expected_tok_s

    print("A. known pacing, simulator (tuiapp.sim.server), /generate, 5 runs x 1 x 256 tokens")
    cases = {
        "new baseline": ["--cuda-graph-max-bs", "128"],
        "old baseline": ["--cuda-graph-max-bs", "512", "--mem-fraction-static", "0.88", "--num-continuous-decode-steps", "4"],
        "EAGLE-3": ["--speculative-algorithm", "EAGLE3"],
    }
    for name, flags in cases.items():
        truth = expected_tok_s(["--model-path", SIM_MODEL, "--tp", "8", *flags])
        try:
            srv = start_sim(flags)
        except RuntimeError as exc:
            print(f"  {name}: simulator failed: {exc}")
            continue
        try:
            loop, reqs = ours(srv.url, api="generate", runs=5)
            info = _server_accept(srv.url)
        finally:
            srv.stop()
        s = loop.summary()
        line = f"  {name}: decode {s['mean_decode_tok_s']:.3f} tok/s vs model {truth:.3f} -> error {pct(s['mean_decode_tok_s'], truth):+.3f}%"
        verify = sum(r.spec_verify_ct or 0 for r in reqs)
        if verify:
            # Per request the server's meta_info says completion_tokens / spec_verify_ct.
            ours_acc = [r.accept_length for r in loop.results]
            server_acc = sum(r.completion_tokens for r in reqs) / verify
            tpc = sum(r.tokens_per_chunk for r in reqs) / len(reqs)
            line += (f"; accept length ours (mean of runs) {sum(ours_acc) / len(ours_acc):.4f},"
                     f" server meta_info (all requests) {server_acc:.4f}; tokens/chunk {tpc:.4f};"
                     f" /server_info avg_spec_accept_length {info}")
        print(line)


def _server_accept(url: str):
    import httpx

    try:
        states = httpx.get(url + "/server_info", timeout=5).json().get("internal_states") or [{}]
        return states[0].get("avg_spec_accept_length")
    except (httpx.HTTPError, ValueError):
        return None


SIM_B_CASES = {
    "1-token chunks (new baseline)": ["--cuda-graph-max-bs", "128"],
    "3-token chunks (3 continuous decode steps)": ["--cuda-graph-max-bs", "128", "--num-continuous-decode-steps", "3"],
    "EAGLE-3 (~3 tokens/chunk, varying)": ["--speculative-algorithm", "EAGLE3"],
}


def part_b(peers: bool, server: str, requests: int) -> None:
    print(f"B. side by side on the same server ({server}), /v1/chat/completions, concurrency 1, {requests} x {TOKENS} tokens")
    out = Path(tempfile.mkdtemp(prefix="bench_fidelity_"))
    if server == "fake":
        cases = {f"{k}-token chunks": (lambda k=k: start_fake(step_ms=STEP_MS, tokens_per_chunk=k, spec=k > 1)) for k in (1, 3)}
    else:
        cases = {name: (lambda flags=flags: start_sim(flags)) for name, flags in SIM_B_CASES.items()}
    for i, (name, start) in enumerate(cases.items()):
        srv = start()
        try:
            loop, reqs = ours(srv.url, api="chat", runs=requests)
            a = run_aiperf(srv.url, out / f"aiperf{i}", concurrency=1, requests=requests, output_tokens=TOKENS) if peers else None
            g = run_genai(srv.url, out / f"genai{i}", concurrency=1, requests=requests, output_tokens=TOKENS) if peers else None
        finally:
            srv.stop()
        ok = [r for r in reqs if r.ok]
        our_tok_s = sum(r.decode_tok_s for r in ok) / len(ok)
        our_itl_ms = sum(r.tpot_s for r in ok) / len(ok) * 1000
        print(f"  {name}")
        print(f"    tuiapp     : decode {our_tok_s:8.3f} tok/s  ITL {our_itl_ms:.4f} ms  "
              f"chunk gap {sum(r.chunk_gap_mean_s for r in ok) / len(ok) * 1000:.3f} ms"
              f"  tokens/chunk {sum(r.tokens_per_chunk for r in ok) / len(ok):.3f}  ({len(ok)} ok)")
        if a is None:
            print("    aiperf     : skipped (not installed or --no-peers)")
        elif not a.ok:
            print(f"    aiperf     : FAILED {a.note}")
        else:
            tps = a.result["output_token_throughput_per_user"]["avg"]
            itl = a.result["inter_token_latency"]["avg"]
            icl = a.result.get("inter_chunk_latency", {}).get("avg")
            print(f"    aiperf     : decode {tps:8.3f} tok/s  ITL {itl:.4f} ms  ICL {icl:.3f} ms"
                  f"  -> ours vs aiperf: tok/s {pct(our_tok_s, tps):+.2f}%, ITL {pct(our_itl_ms, itl):+.2f}%")
        if g is not None and g.ok:
            st = g.result["aggregated_metrics"]["stats"]
            tps = st["output_inference_speed"]["mean"]
            tpot = st["tpot"]["mean"] * 1000
            print(f"    genai-bench: decode {tps:8.3f} tok/s  TPOT {tpot:.4f} ms"
                  f"  -> ours vs genai-bench: tok/s {pct(our_tok_s, tps):+.2f}%, ITL {pct(our_itl_ms, tpot):+.2f}%")
        elif g is not None:
            print(f"    genai-bench: FAILED {g.note}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", choices=["fake", "sim", "both"], default="both")
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--skip-b", action="store_true")
    p.add_argument("--requests", type=int, default=8, help="part B requests per tool and case")
    args = p.parse_args()
    if args.server in ("fake", "both"):
        part_a_fake()
    if args.server in ("sim", "both"):
        if sim_available():
            part_a_sim()
        else:
            print("A. simulator: skipped (tuiapp/sim/server.py not present)")
    if not args.skip_b:
        if args.server in ("fake", "both"):
            part_b(not args.no_peers, "fake", args.requests)
        if args.server in ("sim", "both") and sim_available():
            part_b(not args.no_peers, "sim", args.requests)


if __name__ == "__main__":
    main()

"""``/v1/loads`` and the older ``/get_load`` as SGLang serves them, per DP rank.

Shapes from SGLang's main branch (``managers/load_snapshot.py``, ``entrypoints/v1_loads.py``):
each scheduler publishes a snapshot to shared memory and the HTTP server reads it without a
scheduler call, so a wedged rank's snapshot simply stops changing while the endpoint keeps
answering. The JSON per rank carries the core keys (no per-rank timestamp: ``to_dict``
leaves it out) plus the ``memory`` and ``speculative`` sections; ``include`` picks sections.
``/get_load`` (before #23010) was a scheduler RPC answering a list of
``{dp_rank, num_reqs, num_waiting_reqs, num_tokens}``: it never answers while any rank is
wedged.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tuiapp.sim.model import SGLANG_VERSION

SECTIONS = frozenset({"core", "memory", "spec", "lora", "disagg", "queues", "all"})


class LoadsBoard:
    """The shared-memory board: one slot per DP rank, frozen once its rank wedges."""

    def __init__(self, sim) -> None:
        self.sim = sim  # tuiapp.sim.server.SimServer
        self.frozen: dict[int, dict] = {}

    def wedged(self, dp_rank: int) -> bool:
        s = self.sim.scheduler
        return s.hung or dp_rank in s.hung_dp

    def _live(self, dp_rank: int) -> dict:
        s, plan = self.sim.scheduler, self.sim.plan
        dp = plan.dp_size
        running = [r for r in s.running if r.dp_rank == dp_rank]
        waiting = [r for r in s.waiting if r.dp_rank == dp_rank]
        used = sum(r.prompt_tokens + r.completion_tokens for r in running)
        pool = plan.kv_tokens // dp if dp else plan.kv_tokens
        share = len(running) / len(s.running) if s.running else 0.0
        load = {
            "dp_rank": dp_rank,
            "num_running_reqs": len(running),
            "num_waiting_reqs": len(waiting),
            "num_waiting_uncached_tokens": sum(r.prompt_tokens - r.cached_tokens for r in waiting),
            "num_used_tokens": used,
            "num_total_tokens": used + sum(r.prompt_tokens for r in waiting),
            "max_total_num_tokens": pool,
            "max_running_requests": plan.max_running_requests,
            "token_usage": round(used / pool, 4) if pool else 0.0,
            "gen_throughput": round(s.last_gen_throughput * share, 2),
            "cache_hit_rate": 0.0,
            "utilization": 1.0 if running else 0.0,
            "memory": {"weight_gb": round(plan.mem.weights_gib + plan.mem.draft_weights_gib, 2),
                       "kv_cache_gb": round(plan.mem.kv_gib, 2), "graph_gb": round(plan.mem.graphs_gib, 2),
                       "token_capacity": pool},
        }
        if plan.spec:
            load["speculative"] = {"accept_length": s.last_accept_len or 0.0, "accept_rate": s.last_accept_rate or 0.0}
        return load

    def snapshot(self, dp_rank: int) -> dict:
        if self.wedged(dp_rank):
            return self.frozen.setdefault(dp_rank, self._live(dp_rank))
        self.frozen.pop(dp_rank, None)
        return self._live(dp_rank)

    def v1_loads(self, include: str | None, dp_rank: str | None) -> tuple[int, dict]:
        wanted = {p.strip() for p in include.split(",")} if include else None
        if wanted is not None and not wanted <= SECTIONS:
            return 400, {"detail": f"Invalid include sections: {wanted - SECTIONS}. Valid options: {sorted(SECTIONS)}"}
        ranks = range(self.sim.plan.dp_size)
        if dp_rank is not None:
            try:
                ranks = [int(dp_rank)]
            except ValueError:
                return 422, {"detail": "dp_rank must be an integer"}
        loads = []
        for r in ranks:
            if not 0 <= r < self.sim.plan.dp_size:
                continue
            load = dict(self.snapshot(r))
            for key, token in (("memory", "memory"), ("speculative", "spec")):
                if wanted is not None and "all" not in wanted and token not in wanted:
                    load.pop(key, None)
            loads.append(load)
        return 200, {"timestamp": datetime.now(UTC).isoformat(), "version": SGLANG_VERSION, "loads": loads}

    def get_load(self) -> list[dict]:
        return [{"dp_rank": r, "num_reqs": (snap := self._live(r))["num_running_reqs"] + snap["num_waiting_reqs"],
                 "num_waiting_reqs": snap["num_waiting_reqs"], "num_tokens": snap["num_used_tokens"]}
                for r in range(self.sim.plan.dp_size)]

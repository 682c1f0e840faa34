"""``python -m tuiapp.sim.server``: a stand-in for ``python -m sglang.launch_server``.

Same flags, same stderr log stream, same HTTP API, same ways of dying (see docs/simulator.md "The
simulator" and tuiapp/sim/model.py). One process: the "ranks" are log prefixes and GPU
entries, not processes. The HTTP port is bound at process start so ``GET /sim/gpus``
works during startup; SGLang's own endpoints answer 503 until the (modelled) uvicorn
start, when the real server would begin listening.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import sys
import time
import traceback

from tuiapp.sim import failures, model
from tuiapp.sim.api import Api
from tuiapp.sim.args import parse_args, resolved_server_args
from tuiapp.sim.engine import Scheduler
from tuiapp.sim.gpus import GpuFarm
from tuiapp.sim.http import serve
from tuiapp.sim.logs import SimLog, node_ranks, rank_tags, tqdm_line
from tuiapp.sim.request import SimRequest

GIB = model.GIB
# /model_info's "embedding" block of a generation model, as real 0.5.23 sends it.
EMBEDDING_INFO = {
    "family": "none", "task": "none", "execution": "none", "attention": "none", "pooling": "model_defined",
    "normalize": False, "postprocessor": "none", "tokenizer_special_tokens": "model_default",
    "supports_dimensions": False, "supports_token_embeddings": False, "supports_multimodal": False,
    "requires_embedding_flag": False, "auto_enable_embedding": False, "bcg_eligibility": "disabled",
    "safe_disable_kv_cache": False, "safe_disable_radix_cache": False, "safe_disable_chunked_prefill": False,
    "enabled": False, "matryoshka_dimensions": [],
    "bcg": {"prefill_backend": "disabled", "enabled": False, "capture_token_budget": 4096, "capture_batch_sizes": []},
    "cache": {"kv_cache_disabled": False, "radix_cache_disabled": False, "chunked_prefill_disabled": False},
}


class SimServer:
    def __init__(self, argv: list[str] | None, env=None):
        self.env = dict(os.environ if env is None else env)
        self.ns = parse_args(argv)
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.plan = model.plan_for(self.ns, self.env)
        self.checkpoint = model.checkpoint_for(self.ns.model_path)
        self.speed = max(self.ns.sim_speed, 1e-6)
        self.rng = random.Random(self.ns.sim_seed)
        self.log = SimLog(with_ms=self.env.get("SGLANG_LOG_MS") == "1")
        # --nnodes N --node-rank R: one process per node holding its share of the ranks (global
        # TP numbers); only the head (rank 0) serves HTTP, as SGLang's other nodes run schedulers only
        self.nnodes, self.node_rank = max(self.ns.nnodes or 1, 1), self.ns.node_rank or 0
        self.head = self.node_rank == 0
        self.ranks = node_ranks(rank_tags(self.plan.tp_size, self.plan.dp_size, self.plan.ep_size,
                                          self.plan.attn_dp), self.nnodes, self.node_rank)
        self.farm = GpuFarm(self.ns.sim_gpus, self.ns.sim_seed)
        self.gpus = self.farm.select(range(len(self.ranks)))
        step_s = self.ns.sim_step_ms / 1000.0 if self.ns.sim_step_ms else None
        self.scheduler = Scheduler(
            self.plan, self.log, self.ranks[0], self.farm, seed=self.ns.sim_seed,
            decode_log_interval=self.ns.decode_log_interval,
            radix_cache=not self.ns.disable_radix_cache, step_s=step_s,
            stream_interval=self.ns.stream_interval)
        self.served_model_name = self.ns.served_model_name or self.ns.model_path
        self.context_len = self.ns.context_length or self.checkpoint.context_len
        self.server_args = resolved_server_args(self.ns, self.plan)
        self.http_up = False
        self.ready = False
        self.start_wall_s = time.time()
        self.startup_s = 0.0
        # start-up phases as measured here (seconds), in SGLang's names: /server_info's
        # startup_time and /metrics' start-up families (tuiapp.server.metric_names)
        self.phase_s: dict[str, float] = {}
        self.graph_phase_s: dict[str, float] = {}
        self.health_timeout_s = float(self.env.get("SGLANG_HEALTH_CHECK_TIMEOUT", 20))
        self.last_heartbeat_t = time.time()
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.child_pids = [self.pid + 3 + i for i in range(len(self.ranks))]
        self.avail_after_graph_gib = 0.0

    # ------------------------------------------------------------ info endpoints
    def model_info(self) -> dict:
        ns = self.ns
        return {
            "model_path": ns.model_path, "served_model_name": self.served_model_name,
            "tokenizer_path": ns.tokenizer_path or ns.model_path, "is_generation": True,
            "preferred_sampling_params": None, "weight_version": ns.weight_version,
            "load_format": ns.load_format, "reasoning_parser": ns.reasoning_parser,
            "tool_call_parser": ns.tool_call_parser, "disaggregation_mode": "null",
            "has_image_understanding": False, "has_audio_understanding": False,
            "model_type": self.checkpoint.model_type, "architectures": [self.checkpoint.arch],
            "embedding": EMBEDDING_INFO,
        }

    def server_info(self) -> dict:
        plan, s = self.plan, self.scheduler
        state = {
            **self.server_args, "world_size": plan.tp_size, "startup_time": self.startup_timings(),
            "effective_max_running_requests_per_dp": plan.max_running_requests,
            "last_gen_throughput": s.last_gen_throughput,
            "memory_usage": {
                "weight": round(plan.mem.weights_gib + plan.mem.draft_weights_gib, 2),
                "kvcache": round(plan.mem.kv_gib, 2),
                "startup_available": round(self.avail_after_graph_gib, 2),
                "token_capacity": plan.kv_tokens, "token_capacity_swa": None,
                "graph": {"prefill": 0.0, "decode": round(plan.mem.graphs_gib, 2), "target_verify": 0.0,
                          "draft_prefill": 0.0, "draft_decode": 0.0, "draft_extend": 0.0},
            },
        }
        if s.avg_spec_accept_length is not None:
            state["avg_spec_accept_length"] = s.avg_spec_accept_length
        # 0.5.23's launch_command is the arguments only; max_req_input_len is
        # min(context_len - 1, pool - 1) - 5 (tp_worker.py); startup_time is per stage.
        return {
            **self.server_args, "custom_sigquit_handler": None, "launch_command": " ".join(self.argv),
            "status": "ready" if self.ready else "starting",
            "max_total_num_tokens": plan.kv_tokens,
            "max_req_input_len": min(self.context_len - 1, plan.kv_tokens - 1) - 5,
            "hicache_object_layout": {"enabled": False, "backend": None, "page_size": 1,
                                      "hicache_object_layout": {"pools": []},
                                      "reason": "Hierarchical cache is disabled"},
            "kv_events": None, "startup_time": {**self.startup_timings(), **(
                {"tokenizer_e2e": self.phase_s["tokenizer_e2e"]} if "tokenizer_e2e" in self.phase_s else {})},
            "internal_states": [state], "version": model.SGLANG_VERSION, "frontend": "python",
        }

    def startup_timings(self) -> dict:
        """/server_info's startup_time as 0.5.23 nests it: the scheduler's phases and its graphs."""
        phases = {p: self.phase_s.get(p, 0.0) for p in ("load_weight", "kv_cache_allocation", "scheduler_e2e")}
        return {**phases, "cuda_graph": self.graph_phases()}

    def graph_phases(self) -> dict[str, float]:
        return {p: self.graph_phase_s.get(p, 0.0) for p in
                ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")}

    # ------------------------------------------------------------ helpers
    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds / self.speed)

    async def each_rank(self, message, spread_s: float = 0.08, ranks=None) -> None:
        """One record per rank, interleaved in a seeded random order over ``spread_s``."""
        ranks = list(self.ranks if ranks is None else ranks)
        self.rng.shuffle(ranks)
        for r in ranks:
            self.log.emit(message(r) if callable(message) else message, r)
            await self.pause(spread_s / max(len(ranks), 1))

    def die(self, serving: bool, scheduler_gone: bool = False) -> None:
        """The parent got SIGQUIT: SGLang's kill_process_tree SIGKILLs everything, itself last.

        Serving, 0.5.23 first waits 5 s for crash diagnostics (py-spy of live schedulers), as
        the real CPU server logs after a scheduler is killed (tests/data/logs_real_cpu/).
        """
        self.log.emit(failures.SIGQUIT_SERVING if serving else failures.SIGQUIT_STARTUP)
        if serving:
            self.log.emit("Sleeping 5 seconds before crash diagnostics to let GPU activity settle.")
            sys.stderr.flush()
            time.sleep(5.0 / self.speed)  # the real handler blocks its event loop too
            if scheduler_gone:
                self.log.emit("No live scheduler processes found; skipping py-spy and CUDA coredump.")
            self.log.emit(f"kill_process_tree called: parent_pid={self.pid}, include_parent=True, pid={self.pid}")
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    async def fail_all_ranks(self, message, ranks=None) -> None:
        await self.each_rank(message, spread_s=0.3, ranks=ranks)
        await self.pause(0.2)
        self.die(serving=False)

    async def progress(self, desc_fn, total: int, dur_s: float, style: str, steps: int = 12) -> None:
        """A tqdm bar on TP0's stderr, rewritten with \\r, ending with a newline."""
        for k in range(steps + 1):
            n = round(total * k / steps)
            elapsed = dur_s * k / steps
            self.log.raw("\r" + tqdm_line(desc_fn(n), n, total, elapsed, style))
            if k < steps:
                await self.pause(dur_s / steps)
        self.log.raw("\n")

    def mem_stage(self, to_gib: float, over_s: float) -> None:
        now = time.monotonic()
        for g in self.gpus:
            g.mem_ramp(now, to_gib * GIB, over_s / self.speed)

    def gpu_busy(self, util: int, power: float, rx_bps: float = 2e6, tx_bps: float = 1e6) -> None:
        now = time.monotonic()
        for g in self.gpus:
            g.set_rates(now, tx_bps, rx_bps)
            g.set_load(now, util, power, True)

    # ------------------------------------------------------------ startup
    async def startup(self) -> None:
        ns, plan, mem = self.ns, self.plan, self.plan.mem
        t0 = time.monotonic()
        if plan.failure == "spec_args_assert":
            sys.stderr.write(failures.spec_args_assert())
            sys.stderr.flush()
            os._exit(1)
        if ns.enable_flashinfer_allreduce_fusion:
            self.log.emit("--enable-flashinfer-allreduce-fusion is deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead.")
        if plan.ep_adjusted_from is not None:
            self.log.emit(f"{ns.moe_a2a_backend} MoE is enabled. The expert parallel size is adjusted from "
                          f"{plan.ep_adjusted_from} to the tensor parallel size [{plan.tp_size}].")
        if plan.spec_tokens_adjusted:
            self.log.emit("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1")
        self.log.emit(f"server_args={self.server_args!r}")
        await self.pause(0.3)

        # distributed init
        self.gpu_busy(5, 60.0)
        await self.each_rank("Init torch distributed begin.")
        if plan.failure == "too_few_gpus":
            await self.fail_all_ranks(failures.invalid_device(), ranks=self.ranks[ns.sim_gpus:])
        self.log.emit(f"sglang is using nccl=={model.NCCL_VERSION}", self.ranks[0])
        self.mem_stage(mem.context_gib + mem.custom_ar_gib, 0.2)
        await self.pause(0.2)
        if plan.tp_size > 2 and not ns.disable_custom_all_reduce and not plan.custom_ar:
            await self.each_rank("Custom allreduce is disabled because it's not supported on more than two PCIe-only "
                                 "GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.")
        if plan.failure == "torch_symm_mem_keyerror":
            await self.fail_all_ranks(failures.symm_mem_keyerror())
        await self.each_rank(f"Init torch distributed ends. elapsed=0.25 s, mem usage={mem.context_gib + mem.custom_ar_gib:.2f} GB")
        # 0.5.23's phases only (main adds its registry's, e.g. distributed_init: /server_info's
        # startup_time is held to the real 0.5.23 server's keys)
        t_phase = time.monotonic()

        # weights
        total_gib = mem.total_gib
        avail = total_gib - mem.context_gib - mem.custom_ar_gib
        await self.each_rank(f"Load weight begin. avail mem={avail:.2f} GB")
        # --sim-speed compresses time, not the link: loading takes at least what PCIe needs
        # to carry the weights (1.2 s for Kimi's 72 GiB per GPU at Gen5 x16), so no modelled
        # rate exceeds what the hardware can do.
        # (The log still says the modelled 1.80 s: it is the real server's line.)
        load_s = max(1.8, mem.weights_gib * GIB / model.PCIE_LINK_BYTES_PER_S * self.speed)
        if plan.failure == "load_oom":
            frac = max(min((avail - 0.3) / mem.weights_gib, 1.0), 0.0)
            for g in self.gpus:
                g.rx_ramp(time.monotonic(), mem.weights_gib * frac * GIB, load_s * frac / self.speed)
            self.gpu_busy(12, 110.0)
            self.mem_stage(total_gib - 0.3, load_s * frac)
            await self.progress(lambda n: "Loading safetensors checkpoint shards", 64, load_s * frac, "shards", steps=6)
            used = total_gib - 0.3
            await self.fail_all_ranks(lambda r: failures.load_oom(r.tp, used))
        now = time.monotonic()
        for g in self.gpus:  # the weights cross PCIe once, over the loading window
            g.rx_ramp(now, mem.weights_gib * GIB, load_s / self.speed)
        self.gpu_busy(12, 110.0)
        self.mem_stage(mem.context_gib + mem.custom_ar_gib + mem.weights_gib, load_s)
        await self.progress(lambda n: "Loading safetensors checkpoint shards", 64, load_s, "shards")
        self.gpu_busy(3, 90.0)
        avail -= mem.weights_gib
        await self.each_rank(f"Load weight end. elapsed={min(load_s, 1.8):.2f} s, type={self.checkpoint.arch}"
                             f"{', quant=compressed-tensors' if self.checkpoint is model.KIMI else ''}, "
                             f"avail mem={avail:.2f} GB, mem usage={mem.weights_gib:.2f} GB.")
        if plan.spec:
            await self.each_rank(f"Load weight begin. avail mem={avail:.2f} GB")
            self.mem_stage(mem.used_after_weights_gib, 0.2)
            await self.pause(0.2)
            avail -= mem.draft_weights_gib
            await self.each_rank(f"Load weight end. elapsed=0.20 s, type=LlamaForCausalLMEagle3, avail mem={avail:.2f} GB, "
                                 f"mem usage={mem.draft_weights_gib:.2f} GB.")
        self.gpu_busy(3, 90.0)
        t_phase = self._phase_done("load_weight", t_phase)

        # KV cache
        if plan.failure == "kv_not_enough":
            await self.fail_all_ranks(failures.kv_not_enough(plan.mem_fraction_static))
        self.mem_stage(mem.used_after_weights_gib + mem.kv_gib, 0.1)
        await self.pause(0.1)
        await self.each_rank(f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {plan.kv_tokens}, KV size: {mem.kv_gib:.2f} GB")
        avail -= mem.kv_gib
        await self.each_rank(f"Memory pool end. avail mem={avail:.2f} GB")
        self._phase_done("kv_cache_allocation", t_phase)

        # EP with the FlashInfer all-to-all: AssertionError on some ranks, OOM on the rest
        if plan.failure == "ep_flashinfer_assert_oom":
            ranks = list(self.ranks)
            self.rng.shuffle(ranks)
            bad = ranks[:2]
            await self.each_rank(failures.ep_assertion(), spread_s=0.1, ranks=bad)
            used = mem.used_after_weights_gib + mem.kv_gib + 0.6
            await self.fail_all_ranks(lambda r: failures.ep_oom(r.tp, used), ranks=ranks[2:])

        # CUDA graphs
        if plan.cuda_graph:
            await self.capture("target", "verify" if plan.spec else "decode", plan.spec_draft_tokens if plan.spec else 1,
                               mem.graphs_gib * (0.8 if plan.spec else 1.0), avail)
            avail -= mem.graphs_gib * (0.8 if plan.spec else 1.0)
            if plan.spec:
                await self.capture("draft", "decode", 1, mem.graphs_gib * 0.2, avail)
                avail -= mem.graphs_gib * 0.2
        self.avail_after_graph_gib = avail
        self.phase_s["scheduler_e2e"] = time.monotonic() - t0
        self.gpu_busy(0, 78.0, rx_bps=model.IDLE_BYTES_PER_S, tx_bps=model.IDLE_BYTES_PER_S)
        if not self.head:  # its schedulers now wait for the head's batches; no HTTP here
            self.startup_s = time.monotonic() - t0
            self.ready = True
            return
        self.log.emit(
            f"max_total_num_tokens={plan.kv_tokens}, chunked_prefill_size={plan.chunked_prefill_size}, "
            f"max_prefill_tokens={ns.max_prefill_tokens}, max_running_requests={plan.max_running_requests}, "
            f"context_len={self.context_len}, available_gpu_mem={avail:.2f} GB", self.ranks[0])
        await self.pause(0.1)

        # HTTP server up, warmup, ready
        self.log.uvicorn(f"Started server process [{self.pid}]")
        self.log.uvicorn("Waiting for application startup.")
        self.log.uvicorn("Application startup complete.")
        self.log.uvicorn(f"Uvicorn running on http://{ns.host}:{ns.port} (Press CTRL+C to quit)")
        self.http_up = True
        await self.pause(0.2)
        if not ns.skip_server_warmup:
            await self.warmup()
        self.startup_s = time.monotonic() - t0
        self.phase_s["tokenizer_e2e"] = self.startup_s
        self.scheduler.post_ready_jit_s = (getattr(self.ns, "sim_post_ready_jit_s", 0.0) or 0.0) / self.speed
        self.ready = True
        self.log.emit("The server is fired up and ready to roll!")

    def _phase_done(self, phase: str, since: float) -> float:
        now = time.monotonic()
        self.phase_s[phase] = now - since
        return now

    async def capture(self, who: str, kind: str, per_req: int, graph_gib: float, avail: float) -> None:
        plan = self.plan
        t_phase = time.monotonic()
        await self.each_rank(f"Capture {who} {kind} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, avail mem={avail:.2f} GB")
        if who == "target" and plan.failure in ("flashinfer_jit_sm120", "nccl_tree_graph", "graph_capture_oom"):
            self.gpu_busy(40, 200.0)
            await self.pause(0.3)
            if plan.failure == "flashinfer_jit_sm120":
                await self.fail_all_ranks(failures.flashinfer_jit())
            elif plan.failure == "nccl_tree_graph":
                ranks = list(self.ranks)
                self.rng.shuffle(ranks)
                for r in ranks:
                    self.log.raw(failures.nccl_warn_line(self.host, self.child_pids[self.ranks.index(r)], r.tp))
                await self.fail_all_ranks(failures.nccl_invalid_usage())
            else:
                used = (self.gpus[0].mem_at(time.monotonic()) / GIB) if self.gpus else 0.0
                await self.fail_all_ranks(lambda r: failures.graph_oom(r.tp, used + 0.5))
        self.gpu_busy(45, 210.0)
        bs_list = plan.capture_bs
        dur = 1.0 if who == "target" else 0.4
        now_used = self.gpus[0].mem_at(time.monotonic()) / GIB if self.gpus else 0.0
        self.mem_stage(now_used + graph_gib, dur)
        rev = list(reversed(bs_list))
        await self.progress(
            lambda n: f"Capturing batches (bs={rev[min(n, len(rev) - 1)]} avail_mem={avail - graph_gib * n / len(rev):.2f} GB)",
            len(rev), dur, "bar", steps=min(len(rev), 12))
        await self.each_rank(f"Capture {who} {kind} CUDA graph end. bs={bs_list}, elapsed={dur:.2f} s, "
                             f"mem usage={graph_gib:.2f} GB, avail mem={avail - graph_gib:.2f} GB.")
        # SGLang's graph phases: the target's decode graphs (target_verify under speculation)
        graph = {("target", "decode"): "decode", ("target", "verify"): "target_verify"}.get((who, kind), "draft_decode")
        self.graph_phase_s[graph] = self.graph_phase_s.get(graph, 0.0) + time.monotonic() - t_phase

    async def warmup(self) -> None:
        self.log.access(f"127.0.0.1:{40000 + self.rng.randrange(20000)}", "GET", "/model_info", 200, "OK")
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        from tuiapp.sim import textgen

        def sink(r: SimRequest) -> None:
            if r.finish_reason is not None and not done.done():
                done.set_result(None)

        self.scheduler.submit(SimRequest("warmup", textgen.token_ids("The capital city of France is"), 8, True, [], 0, sink, False))
        await done
        self.log.access(f"127.0.0.1:{40000 + self.rng.randrange(20000)}", "POST", "/generate", 200, "OK")

    # ------------------------------------------------------------ runtime faults
    def arm_faults(self) -> None:
        loop = asyncio.get_running_loop()
        for kind, at in self.ns.sim_fault:
            if at is None:
                fired = [False]

                def hook(kind=kind, fired=fired):
                    if not fired[0]:
                        fired[0] = True
                        self.fire(kind)
                self.scheduler.on_step.append(hook)
            else:
                loop.call_later(max(at, 0.0), self.fire, kind)

    def fire(self, kind: str) -> None:
        s = self.scheduler
        if kind == "nan":
            s.nan_pending = True
            return
        if kind == "kv_pressure":
            s.kv_pressure = True
            return
        if kind == "rank_hang":  # the last DP rank wedges alone; the others serve on
            s.hung_dp.add(self.plan.dp_size - 1)
            asyncio.get_running_loop().create_task(self.fatal(kind))
            return
        s.hung = True
        asyncio.get_running_loop().create_task(self.fatal(kind))

    async def fatal(self, kind: str) -> None:
        victim = self.ranks[min(3, len(self.ranks) - 1)]
        used = self.gpus[0].mem_at(time.monotonic()) / GIB if self.gpus else 0.0
        if kind == "oom":
            self.log.emit(failures.serving_oom(victim.tp, used), victim)
        elif kind == "decode_oom":
            n = max(self.scheduler.num_running, 1)
            self.log.emit(failures.decode_oom_error(n, 1.0), self.ranks[0])
            self.log.emit(failures.decode_oom_exception(n, 1.0), self.ranks[0])
        elif kind == "assertion":
            self.log.emit(failures.serving_assertion(), victim)
        elif kind == "crash":
            idx = self.ranks.index(victim)
            self.log.emit(f"Subprocess scheduler_{idx} (pid={self.child_pids[idx]}) crashed with exit code -9. "
                          "Triggering SIGQUIT for cleanup...")
        elif kind == "nccl_timeout":
            timeout_ms = 600_000
            await asyncio.sleep(timeout_ms / 1000 / self.speed)
            ranks = list(self.ranks)
            self.rng.shuffle(ranks)
            for r in ranks:
                self.log.raw(failures.nccl_watchdog_lines(r.tp, 4242 + self.scheduler.n_submitted, timeout_ms,
                                                          self.child_pids[self.ranks.index(r)]))
                await self.pause(0.02)
            self.log.emit(f"Subprocess scheduler_0 (pid={self.child_pids[0]}) crashed with exit code -6. "
                          "Triggering SIGQUIT for cleanup...")
        elif kind in ("hang", "rank_hang"):
            wd = self.ns.watchdog_timeout
            await asyncio.sleep(wd / self.speed)
            wedged = [r for r in self.ranks if kind == "hang" or (r.dp or 0) in self.scheduler.hung_dp]
            for r in wedged:
                pid = self.child_pids[self.ranks.index(r)]
                self.log.emit(f"Pyspy failed to dump PID {pid}. Error: [Errno 2] No such file or directory: 'py-spy'", r)
            for r in wedged:
                self.log.emit(f"Scheduler watchdog timeout (self.watchdog_timeout={wd:g}, self.soft=False)", r)
        await self.pause(0.1)
        self.die(serving=True, scheduler_gone=kind == "crash")

    def _scheduler_died(self, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return
        text = "".join(traceback.format_exception(task.exception()))
        self.log.emit("Scheduler hit an exception: " + text.rstrip("\n"), self.ranks[0])
        self.die(serving=self.ready)

    # ------------------------------------------------------------ main
    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        try:
            # the head serves SGLang's API; another node only the simulator's own /sim/gpus (its
            # SGLang endpoints answer 503: it never starts uvicorn), on --port plus its node rank,
            # so emulated nodes on one host do not collide (tuiapp.slurm's GPU agent reads it there)
            server = await serve(Api(self).handle, self.ns.host, self.ns.port + (0 if self.head else self.node_rank))
        except OSError as exc:
            self.log.uvicorn(f"[Errno {exc.errno}] {exc.strerror}", "ERROR")
            return 1
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda sig=sig: stop.done() or stop.set_result(sig))
        sched_task = loop.create_task(self.scheduler.run())
        sched_task.add_done_callback(self._scheduler_died)
        startup = loop.create_task(self.startup())
        await asyncio.wait([startup, stop], return_when=asyncio.FIRST_COMPLETED)
        if startup.done() and startup.exception() is not None:  # a simulator bug, not a modelled failure
            traceback.print_exception(startup.exception())
            return 1
        if startup.done():
            self.arm_faults()
            await stop
        if stop.done() and stop.result() == signal.SIGTERM:  # 0.5.23's graceful drain, as it logs it
            self.log.emit("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
            n = self.scheduler.num_running
            self.log.emit(f"Gracefully exiting... Remaining number of requests {n}. Remaining requests remaining_rids=[].")
            self.log.emit(f"kill_process_tree called: parent_pid={self.pid}, include_parent=False, pid={self.pid}")
        if not self.head:  # no uvicorn to stop
            server.close()
            for t in (sched_task, startup):
                t.cancel()
            return 0
        self.log.uvicorn("Shutting down")
        server.close()
        for t in (sched_task, startup):
            t.cancel()
        self.log.uvicorn("Waiting for application shutdown.")
        self.log.uvicorn("Application shutdown complete.")
        self.log.uvicorn(f"Finished server process [{self.pid}]")
        return 0


def main(argv: list[str] | None = None) -> int:
    sim = SimServer(argv)
    try:
        return asyncio.run(sim.main())
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())

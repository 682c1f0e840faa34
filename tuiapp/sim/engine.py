"""The simulated scheduler: prefill and decode steps paced against absolute deadlines.

One asyncio task runs the loop. Each step's deadline is the previous deadline plus the
modelled step time (never "now + step"), so wake-up lateness never accumulates: over a
request, (completion_tokens - 1) / (e2e - ttft) equals the modelled rate to within one
timer wake-up jitter. Requests arriving while a batch decodes are prefilled before the
next decode step (their prefill delays the running ones, as in SGLang without overlap);
a batch of B requests shares each step (step time grows mildly with B, see model.py).

Load, as SGLang 0.5.23's scheduler does it: a waiting request is admitted (FCFS, head of
line blocks) when its uncached input plus its whole min(max_new_tokens, 4096) plus one
page fits in the KV pool beside what the running requests hold and reserve, each running
one reserving new_token_ratio x its remaining output (schedule_policy.py add_one_req);
the ratio starts at 0.7 and decays per decode step to 0.098. A decode step that does not fit retracts the
requests with the fewest output tokens (ties: the longest input) until the rest have
room for 20 more steps, logs "KV cache pool is full. Retract requests. ...", raises the
ratio to what the kept ones need, and queues the retracted ones first again; a retracted
request re-prefills its input and output so far and keeps streaming. Prompts (and, at
finish, prompt plus output) go into the radix cache (radix.py); a request's cached_tokens
is its longest cached prefix. The clock is injectable (tests step it instead of sleeping).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from tuiapp.sim import textgen
from tuiapp.sim.acceptance import AcceptSampler
from tuiapp.sim.histogram import E2E_BUCKETS, ITL_BUCKETS, QUEUE_BUCKETS, TTFT_BUCKETS, Histogram
from tuiapp.sim.model import (
    IDLE_BYTES_PER_S,
    INGRESS_S,
    INIT_NEW_TOKEN_RATIO,
    MIN_NEW_TOKEN_RATIO,
    NEW_TOKEN_RATIO_DECAY,
    RETRACT_DECODE_STEPS,
    Plan,
)
from tuiapp.sim.radix import RadixCache
from tuiapp.sim.request import SimRequest


class Scheduler:
    def __init__(self, plan: Plan, log, rank0, farm, *, seed: int, decode_log_interval: int,
                 radix_cache: bool, step_s: float | None = None, stream_interval: int = 1,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable | None = None):
        self.plan = plan
        self.clock = clock
        self.sleep = sleep or asyncio.sleep
        self.stream_interval = max(stream_interval, 1)
        self.log = log
        self.rank0 = rank0
        self.farm = farm
        self.seed = seed
        self.interval = max(decode_log_interval, 1)
        self.radix_cache = radix_cache
        self.step_s = step_s if step_s is not None else plan.step_s
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.wake = asyncio.Event()
        self.hung = False
        self.hung_dp: set[int] = set()  # DP ranks wedged alone (--sim-fault rank_hang)
        self.n_submitted = 0
        self.ingress_free_s = 0.0  # when the serial hand-over stage (model.INGRESS_S) is next free
        self.radix = RadixCache()
        self.new_token_ratio = INIT_NEW_TOKEN_RATIO
        self.active_gpus = farm.select(range(plan.world_size))
        self.on_step: list[Callable[[], None]] = []  # fault hooks, called before each decode step
        # a lazy JIT compile the first prefill after ready waits on (--sim-post-ready-jit-s), and
        # the seconds such start-up work took after ready, as the main branch counts them
        self.post_ready_jit_s = 0.0
        self.post_startup_s: dict[str, float] = {}
        self.nan_pending = False
        self.kv_pressure = False
        # decode-log window
        self.win_tokens = 0
        self.win_steps = 0
        self.win_accept_tokens = 0
        self.win_forward_ct = 0
        self.win_correct = 0
        self.win_busy_s = 0.0
        self.seg_t0 = clock()
        self.busy = False
        self.last_gen_throughput = 0.0
        self.last_accept_len: float | None = None
        self.last_accept_rate: float | None = None
        self.last_prefill_t = clock()
        self.spec_total_accept_tokens = 0
        self.spec_total_forward_ct = 0
        self.num_retracted_reqs = 0
        # tokenizer-side counters (/metrics)
        # keyed by is_streaming ("true"/"false"), the label 0.5.23 puts on them
        self.prompt_tokens_total = {"true": 0, "false": 0}
        self.generation_tokens_total = {"true": 0, "false": 0}
        self.cached_tokens_total = 0
        self.num_requests_total = {"true": 0, "false": 0}
        self.num_aborted_total = 0
        self.spec_verify_calls_total = 0
        self.retracted_total = 0
        self.retracted_input_tokens_total = 0
        self.retracted_output_tokens_total = 0
        self.h_queue = Histogram(QUEUE_BUCKETS)
        self.h_ttft = {k: Histogram(TTFT_BUCKETS) for k in ("true", "false")}
        self.h_e2e = {k: Histogram(E2E_BUCKETS) for k in ("true", "false")}
        self.h_itl = Histogram(ITL_BUCKETS)
        self.cuda_graph_passes_total = {"prefill_none": 0, "decode_cuda_graph": 0, "decode_none": 0}

    # ------------------------------------------------------------ client side
    def submit(self, req: SimRequest) -> None:
        if self.plan.spec:
            req.sampler = AcceptSampler(self.seed * 1_000_003 + self.n_submitted, self.plan.position_rates(),
                                        self.plan.spec_num_steps)
            req.accept_hist = [0] * (self.plan.spec_num_steps + 1)
            req.cap_hist = [0] * (self.plan.spec_num_steps + 1)
        req.dp_rank = self.n_submitted % self.plan.dp_size  # round robin, as the DP controller's default
        self.n_submitted += 1
        req.t_arrive = self.clock()
        req.t_ready = max(req.t_arrive, self.ingress_free_s) + INGRESS_S * self.step_s / self.plan.step_s
        self.ingress_free_s = req.t_ready
        self.waiting.append(req)
        self.wake.set()

    def abort(self, req: SimRequest) -> None:
        if req.finish_reason is None and not req.aborted:
            req.aborted = True
            self.num_aborted_total += 1

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    def used_tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.running)

    def token_usage(self) -> float:
        return self.used_tokens() / self.plan.kv_tokens if self.plan.kv_tokens else 0.0

    def flush(self) -> bool:
        if self.running or self.waiting:
            self.log.emit(
                f"Cache not flushed because there are pending requests. #queue-req: {len(self.waiting)}, "
                f"#running-req: {len(self.running)}", self.rank0)
            return False
        self.radix.clear()
        self.spec_total_accept_tokens = self.spec_total_forward_ct = 0
        self.log.emit("Cache flushed successfully!", self.rank0)
        return True

    @property
    def avg_spec_accept_length(self) -> float | None:
        if not self.plan.spec or not self.spec_total_forward_ct:
            return None
        return self.spec_total_accept_tokens / self.spec_total_forward_ct

    # ------------------------------------------------------------ GPU side effects
    def _gpu_load(self, kind: str, batch: int = 0) -> None:
        now = self.clock()
        plan = self.plan
        if kind == "decode":
            step = self.step_s_for(batch)
            bps = plan.pcie_bytes_per_step(batch) / step
            util, power = (100, 420.0) if plan.custom_ar else ((96, 330.0) if plan.uses_graph(batch) else (80, 285.0))
        elif kind == "prefill":
            bps, util, power = 2e8, 100, 380.0
        else:
            bps, util, power = IDLE_BYTES_PER_S, 0, 78.0
        for g in self.active_gpus:
            g.set_rates(now, bps, bps)
            g.set_load(now, util, power, kind != "idle")

    def step_s_for(self, batch: int) -> float:
        return self.step_s * (self.plan.step_s_for_batch(batch) / self.plan.step_s)

    # ------------------------------------------------------------ the loop
    async def run(self) -> None:
        deadline: float | None = None
        last_batch = -1
        while True:
            if self.hung:
                await asyncio.Future()  # wedged: never steps again
            self._drop_aborted()
            if not self.waiting and not self.running:
                if self.busy:
                    self.busy = False
                    self.win_busy_s += self.clock() - self.seg_t0
                    self._gpu_load("idle")
                    last_batch = -1
                self.wake.clear()
                await self.wake.wait()
                deadline = None
                continue
            now = self.clock()
            if not self.busy:
                self.busy = True
                self.seg_t0 = now
            if deadline is None or deadline < now - 0.05:
                deadline = now  # fell far behind (or just woke): restart the schedule
            batch, new_tokens = self._admit()
            if batch:
                self._gpu_load("prefill")
                if self.post_ready_jit_s:
                    jit_s, self.post_ready_jit_s = self.post_ready_jit_s, 0.0
                    deadline += jit_s
                    self.post_startup_s["deepgemm_jit"] = self.post_startup_s.get("deepgemm_jit", 0.0) + jit_s
                deadline += self.plan.prefill_s(new_tokens) * self.step_s / self.plan.step_s
                await self._sleep_until(deadline)
                self._prefill_done(batch, new_tokens)
                last_batch = -1
                continue
            if not self.running:
                head = next((r for r in self.waiting if not r.aborted), None)
                if head is not None:  # still in the hand-over stage: the scheduler sees it then
                    await self._sleep_until(head.t_ready)
                    deadline = None
                continue  # (else only aborted requests were waiting)
            batch_n = len(self.running)
            if batch_n != last_batch:
                self._gpu_load("decode", batch_n)
                last_batch = batch_n
            for hook in self.on_step:
                hook()
            if self.hung:
                continue
            group = self.plan.decode_steps
            for k in range(group):
                if not self._decode_fits():
                    self._retract()
                deadline += self.step_s_for(len(self.running))
                await self._sleep_until(deadline)
                if self.hung:
                    break
                self._decode_step(flush=(k == group - 1))
                if not self.running:
                    break

    async def _sleep_until(self, deadline: float) -> None:
        delay = deadline - self.clock()
        if delay > 0:
            await self.sleep(delay)

    # ------------------------------------------------------------ KV pool
    def _reserved_tokens(self) -> float:
        return sum(r.remaining_new for r in self.running) * self.new_token_ratio

    def _admit(self) -> tuple[list[SimRequest], int]:
        """The next prefill batch from the head of the queue, as the KV pool and limits allow."""
        room = self.plan.max_running_requests - len(self.running)
        if not self.waiting or room <= 0:
            return [], 0
        pool = self.plan.kv_tokens
        free = pool - self.used_tokens() - self._reserved_tokens()
        batch: list[SimRequest] = []
        new_tokens = 0
        now = self.clock()
        while self.waiting and len(batch) < room:
            r = self.waiting[0]
            if r.aborted:
                self.waiting.popleft()
                continue
            if r.t_ready > now:  # not handed over yet (FIFO: nor is anything behind it)
                break
            total = r.prompt_tokens + (r.completion_tokens if r.resumed else 0)
            cached = 0
            if self.radix_cache and not r.resumed and r.prompt_tokens > 1:
                cached = min(self.radix.match(r.prompt_ids), r.prompt_tokens - 1)
            extend = total - cached
            need = total + r.remaining_new + 1  # the page the paged allocator may add
            # head of line waits for room; an empty server takes it whatever its size
            # (the pool bounds a request's length at the API, as max_req_input_len does)
            if pool and need > free and (batch or self.running):
                break
            if batch and new_tokens + extend > self.plan.max_prefill_tokens:
                break
            self.waiting.popleft()
            if not r.resumed:
                r.cached_tokens = cached
            if not r.t_admit:
                r.t_admit = now
                self.h_queue.observe(r.queue_s)
            batch.append(r)
            free -= need  # within a batch the whole estimate; once running, ratio x remaining
            new_tokens += extend
        return batch, new_tokens

    def _decode_fits(self) -> bool:
        pool = self.plan.kv_tokens
        per_req = self.plan.spec_draft_tokens if self.plan.spec else 1
        return not pool or self.used_tokens() + per_req * len(self.running) <= pool

    def _retract(self) -> None:
        """SGLang's retract_decode: free the least-advanced requests and queue them again."""
        pool = self.plan.kv_tokens
        keep = sorted(self.running, key=lambda r: (r.completion_tokens, -r.prompt_tokens), reverse=True)
        used = self.used_tokens()
        out: list[SimRequest] = []
        while len(keep) > 1 and (not out or used + RETRACT_DECODE_STEPS * len(keep) > pool):
            r = keep.pop()
            out.append(r)
            used -= r.prompt_tokens + r.completion_tokens
        if not out:
            return
        gone = {id(r) for r in out}
        self.running = [r for r in self.running if id(r) not in gone]
        gained = sum(r.prompt_tokens + r.completion_tokens for r in out)
        old_ratio = self.new_token_ratio
        decoded = sum(r.completion_tokens for r in self.running)
        wanted = sum(r.max_new for r in self.running)
        self.new_token_ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(self.running)) / (wanted + 1))
        self.num_retracted_reqs = len(out)
        self.retracted_total += len(out)
        self.retracted_input_tokens_total += sum(r.prompt_tokens for r in out)
        self.retracted_output_tokens_total += sum(r.completion_tokens for r in out)
        for r in reversed(out):  # the least advanced ends up last in line among them
            r.retractions += 1
            r.resumed = True
            self.waiting.appendleft(r)
        self.log.emit(
            f"KV cache pool is full. Retract requests. #retracted_reqs: {len(out)}, "
            f"#new_tokens_gained: {gained}, #new_token_ratio: {old_ratio:.4f} -> {self.new_token_ratio:.4f}",
            self.rank0)

    def _drop_aborted(self) -> None:
        if any(r.aborted for r in self.waiting):
            self.waiting = deque(r for r in self.waiting if not r.aborted)
        if any(r.aborted for r in self.running):
            self.running = [r for r in self.running if not r.aborted]

    # ------------------------------------------------------------ token production
    def _append(self, req: SimRequest, now: float) -> None:
        """One output token; sets finish_reason when this token ends the request."""
        i = req.completion_tokens
        if not req.ignore_eos and i + 1 >= req.eos_at:
            req.output_ids.append(textgen.EOS_ID)
            req.completion_tokens += 1
            req.finish_reason = {"type": "stop", "matched": textgen.EOS_ID}
            return
        piece, tid = textgen.word(req.walk, i)
        req.output_ids.append(tid)
        req.completion_tokens += 1
        if req.stops and piece.strip() in req.stops:
            req.finish_reason = {"type": "stop", "matched": piece.strip()}
            return
        req.text += piece
        if req.completion_tokens >= req.max_new:
            req.finish_reason = {"type": "length", "length": req.max_new}

    def _prefill_done(self, batch: list[SimRequest], new_tokens: int) -> None:
        now = self.clock()
        cached = sum(r.cached_tokens for r in batch if not r.resumed)
        running_before = len(self.running)
        live = [r for r in batch if not r.aborted]
        for r in live:
            if r.resumed:  # a retracted request: recomputed, its stream goes on
                r.resumed = False
                self._append(r, now)
                r.pending += 1
                if r.finish_reason is not None or r.pending >= self.stream_interval:
                    self._emit(r, now)
                continue
            r.t_first = r.t_last = now
            self.prompt_tokens_total["true" if r.streaming else "false"] += r.prompt_tokens
            self.cached_tokens_total += r.cached_tokens
            if self.radix_cache:
                self.radix.insert(r.prompt_ids)
            if r.max_new <= 0:
                r.finish_reason = {"type": "length", "length": 0}
            else:
                self._append(r, now)
            self.h_ttft["true" if r.streaming else "false"].observe(now - r.t_arrive)
            self._emit(r, now)
        self.running.extend(r for r in live if r.finish_reason is None)
        if self.radix_cache:
            self.radix.evict_to(self.plan.kv_tokens - self.used_tokens())
        self.cuda_graph_passes_total["prefill_none"] += 1
        gap = now - self.last_prefill_t
        self.last_prefill_t = now
        self.log.emit(
            f"Prefill batch, #new-seq: {len(batch)}, #new-token: {new_tokens}, #cached-token: {cached}, "
            f"token usage: {self.token_usage():.2f}, #running-req: {running_before}, "
            f"#queue-req: {len(self.waiting)}, #pending-token: 0, cuda graph: False, "
            f"input throughput (token/s): {new_tokens / gap if gap > 0 else 0.0:.2f}", self.rank0)

    def _decode_step(self, flush: bool) -> None:
        now = self.clock()
        produced = 0
        correct = 0
        batch = len(self.running)
        spec = self.plan.spec
        nan_victim = self.running[0] if self.nan_pending and self.running else None
        self.nan_pending = False
        self.new_token_ratio = max(self.new_token_ratio - NEW_TOKEN_RATIO_DECAY, MIN_NEW_TOKEN_RATIO)
        self.cuda_graph_passes_total["decode_cuda_graph" if self.plan.uses_graph(batch) else "decode_none"] += 1
        for r in self.running:
            if r.aborted:
                continue
            if r is nan_victim:
                r.finish_reason = {"type": "stop", "matched": "NaN happened"}
                self._emit(r, now)
                continue
            if r.dp_rank in self.hung_dp:
                continue  # its rank is wedged: the request waits for ever
            budget = self.plan.step_budget(r.spec_verify_ct) if spec else 0
            n = r.sampler.draw(budget) if spec else 1
            before = r.completion_tokens
            for _ in range(n):
                self._append(r, now)
                if r.finish_reason is not None:
                    break
            got = r.completion_tokens - before
            produced += got
            if spec:
                r.spec_verify_ct += 1
                r.accept_hist[got - 1] += 1
                r.cap_hist[budget] += 1
                r.correct_drafts += got - 1
                r.proposed_drafts += budget
                correct += got - 1
            r.pending += got
            if r.finish_reason is not None or (flush and r.pending >= self.stream_interval):
                self._emit(r, now)
        self.running = [r for r in self.running if r.finish_reason is None and not r.aborted]
        self.win_tokens += produced
        self.win_steps += 1
        if spec:
            self.win_accept_tokens += produced
            self.win_forward_ct += batch
            self.win_correct += correct
        if self.win_steps >= self.interval:
            self._decode_log(batch)

    def _emit(self, r: SimRequest, now: float) -> None:
        if r.t_last and r.pending:
            self.h_itl.observe((now - r.t_last) / r.pending)
        r.t_last = now
        r.pending = 0
        if r.finish_reason is not None:
            r.t_done = now
            if self.radix_cache and r.completion_tokens:
                self.radix.insert(r.prompt_ids + r.output_ids)
            self.num_requests_total["true" if r.streaming else "false"] += 1
            self.generation_tokens_total["true" if r.streaming else "false"] += r.completion_tokens
            self.spec_verify_calls_total += r.spec_verify_ct
            self.h_e2e["true" if r.streaming else "false"].observe(now - r.t_arrive)
        r.sink(r)

    def _decode_log(self, batch: int) -> None:
        now = self.clock()
        elapsed = self.win_busy_s + (now - self.seg_t0)
        self.last_gen_throughput = self.win_tokens / elapsed if elapsed > 0 else 0.0
        spec_part = ""
        if self.plan.spec and self.win_forward_ct:
            self.last_accept_len = self.win_accept_tokens / self.win_forward_ct
            self.last_accept_rate = self.win_correct / (self.win_forward_ct * max(self.plan.spec_draft_tokens - 1, 1))
            self.spec_total_accept_tokens += self.win_accept_tokens
            self.spec_total_forward_ct += self.win_forward_ct
            spec_part = f"accept len: {self.last_accept_len:.2f}, accept rate: {self.last_accept_rate:.2f}, "
        used = self.used_tokens()
        self.log.emit(
            f"Decode batch, #running-req: {batch}, #token: {used}, token usage: {self.token_usage():.2f}, "
            f"{spec_part}cuda graph: {self.plan.uses_graph(batch)}, gen throughput (token/s): "
            f"{self.last_gen_throughput:.2f}, #queue-req: {len(self.waiting)}", self.rank0)
        if self.kv_pressure and self.running:
            victim = self.running[-1]
            victim.retractions += 1
            self.num_retracted_reqs = 1
            self.retracted_total += 1
            gained = victim.prompt_tokens + victim.completion_tokens
            self.log.emit(
                "KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                f"#new_tokens_gained: {gained}, #new_token_ratio: 0.7000 -> 1.0000", self.rank0)
        self.win_tokens = self.win_steps = 0
        self.win_accept_tokens = self.win_forward_ct = self.win_correct = 0
        self.win_busy_s = 0.0
        self.seg_t0 = now

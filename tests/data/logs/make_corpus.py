"""Writes the log corpus and each log's expected ``tuiapp logscan --json`` answer.

The logs follow the formats in docs/sglang-interface.md §7 (0.5.23 strings, and the older
spellings). Each scenario states its ground truth as it builds the log (where an incident
starts, which ranks, which message a human needs), independently of the watcher.
Run: python tests/data/logs/make_corpus.py  (rewrites *.log and *.expected.json here).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
SITE = "/usr/local/lib/python3.12/dist-packages"
OLD_SITE = "/usr/local/lib/python3.10/dist-packages"


class Log:
    def __init__(self, day: str = "2026-03-14", start_s: int = 9 * 3600, ms: bool = False) -> None:
        self.parts: list[str] = []
        self.line = 1  # number of the next line
        self.day = day
        self.t = start_s
        self.ms = ms
        self.decode = 0
        self.ready = False
        self.gen: dict[int | None, float] = {}
        self.acc: dict[int | None, float] = {}
        self.incidents: list[dict] = []

    def ts(self) -> str:
        t = int(self.t)
        s = f"{self.day} {t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"
        if self.ms:
            s += f".{int((self.t - t) * 1000):03d}"
        return s

    def tick(self, dt: float) -> None:
        self.t += dt

    def raw(self, text: str) -> int:
        """Append text (may hold several lines, and "\\r"); returns its first line number."""
        first = self.line
        self.parts.append(text + "\n")
        self.line += text.count("\n") + 1
        return first

    def rec(self, msg: str, tp: int | None = None, dp: int | None = None, ep: int | None = None,
            ray: str | None = None) -> int:
        tags = "".join(f" {n}{v}" for n, v in (("DP", dp), ("TP", tp), ("EP", ep)) if v is not None)
        head = f"({ray}) " if ray else ""
        return self.raw(f"{head}[{self.ts()}{tags}] {msg}")

    def incident(self, kind: str, ranks: list[int], first_line: int, message: str,
                 signature_line: int | None = None, caused_by: int | None = None) -> int:
        """Records the ground truth; returns the incident's id (incidents count from 1 in file order)."""
        self.incidents.append({"id": len(self.incidents) + 1, "kind": kind, "ranks": sorted(ranks),
                               "first_line": first_line, "signature_line": signature_line, "message": message,
                               "caused_by": caused_by})
        return len(self.incidents)

    def death(self, line: int, message: str, ranks: list[int] | None = None) -> int:
        """The server died at ``line``: its own crash incident, caused by the incident before it."""
        return self.incident("crash", ranks or [], line, message, line, self.incidents[-1]["id"] if self.incidents else None)

    def write(self, name: str) -> None:
        (HERE / f"{name}.log").write_bytes("".join(self.parts).encode("utf-8", "surrogateescape"))
        gen: float | None
        if not self.gen:
            gen = None
        elif any(k is not None for k in self.gen):
            gen = round(sum(self.gen.values()), 2)
        else:
            gen = self.gen[None]
        acc = None if not self.acc else round(sum(self.acc.values()) / len(self.acc), 2)
        lines = "".join(self.parts).split("\n")
        for inc in self.incidents:
            if inc["signature_line"] is None:
                # the decisive line: the first line of the incident that ends with its message
                head = inc["message"].split("\n")[0]
                inc["signature_line"] = next(n for n in range(inc["first_line"], len(lines) + 1)
                                             if lines[n - 1].rstrip().endswith(head))
        expected = {"ready": self.ready, "decode_lines": self.decode, "last_gen_throughput": gen,
                    "last_accept_len": acc, "incidents": self.incidents}
        (HERE / f"{name}.expected.json").write_text(json.dumps(expected, indent=2) + "\n")


# ------------------------------------------------------------------ building blocks

SIGQUIT_OLD = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_0523 = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."

SERVER_ARGS_0523 = (
    "server_args={'model_path': 'moonshotai/Kimi-K2.5', 'tokenizer_path': 'moonshotai/Kimi-K2.5', "
    "'host': '127.0.0.1', 'port': 30000, 'tp_size': 8, 'ep_size': 1, 'dp_size': 1, "
    "'mem_fraction_static': 0.78, 'chunked_prefill_size': 8192, 'max_running_requests': None, "
    "'cuda_graph_config': {'decode': {'backend': 'full', 'max_bs': 128}, 'prefill': {'backend': 'disabled'}}, "
    "'enable_torch_symm_mem': False, 'enable_symm_mem': False, 'disable_custom_all_reduce': False, "
    "'enable_flashinfer_allreduce_fusion': False, 'flashinfer_allreduce_fusion_backend': None, "
    "'speculative_algorithm': 'EAGLE3', 'speculative_draft_model_path': 'lightseekorg/kimi-k2.5-eagle3', "
    "'speculative_num_steps': 3, 'speculative_eagle_topk': 1, 'speculative_num_draft_tokens': 4, "
    "'watchdog_timeout': 300.0, 'log_level': 'info', 'log_requests': True, 'decode_log_interval': 40, "
    "'api_key': None, 'enable_metrics': False, 'oom_killer_note': 'out of memory handling: default', "
    "'moe_runner_backend': 'auto', 'moe_a2a_backend': 'none', 'kv_cache_dtype': 'auto'}"
)
SERVER_ARGS_OLD = (
    "server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', tokenizer_path='meta-llama/Llama-3.1-70B-Instruct', "
    "host='127.0.0.1', port=30000, mem_fraction_static=0.88, max_running_requests=None, tp_size={tp}, "
    "cuda_graph_max_bs=512, disable_cuda_graph=False, disable_custom_all_reduce=False, "
    "enable_torch_symm_mem=False, num_continuous_decode_steps=4, speculative_algorithm=None, "
    "watchdog_timeout=300, log_level='info', decode_log_interval=40)"
)


def nccl_info(log: Log, tp: int) -> None:
    for r in range(tp):
        log.raw(f"gpu-node-1:{4100 + r}:{4100 + r} [{r}] NCCL INFO Bootstrap: Using eth0:10.0.0.5<0>")
    log.raw("gpu-node-1:4100:4100 [0] NCCL INFO cudaDriverVersion 13000")
    log.raw("gpu-node-1:4100:4100 [0] NCCL INFO NCCL version 2.27.3+cuda12.9")
    for r in range(tp):
        log.raw(f"gpu-node-1:{4100 + r}:{4180 + r} [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> {(r + 1) % tp}[{(r + 1) % tp}] via SHM/direct/direct")


def tqdm(label: str, total: int, unit: str = "it") -> str:
    steps = [0, total // 4, total // 2, 3 * total // 4, total]
    out = []
    for s in steps:
        pct = 100 * s // total
        bar = "█" * (pct // 10) + " " * (10 - pct // 10)
        out.append(f"{label}: {pct:3d}%|{bar}| {s}/{total} [00:{s % 60:02d}<00:00,  1.93{unit}/s]")
    return "\r" + "\r".join(out)


def startup_0523(log: Log, tp: int = 8, spec: bool = True, ep: bool = False, warn_custom_ar: bool = True,
                 stop_at_capture: bool = False) -> None:
    log.raw(f"{SITE}/sglang/launch_server.py:12: UserWarning: 'python -m sglang.launch_server' is still supported, 'sglang serve' is the recommended entry point.")
    log.raw("  warnings.warn(")
    log.rec(SERVER_ARGS_0523)
    log.tick(3)
    for r in range(tp):
        log.rec("Init torch distributed begin.", tp=r, ep=r if ep else None)
    nccl_info(log, tp)
    for r in range(tp):
        log.rec("sglang is using nccl==2.27.3", tp=r, ep=r if ep else None)
    if warn_custom_ar:
        for r in range(tp):
            log.rec("Setup Custom allreduce failed with Cuda error 217 'peer access is not supported between these two devices'. "
                    "To silence this warning, specify --disable-custom-all-reduce explicitly.", tp=r, ep=r if ep else None)
    log.tick(2)
    for r in range(tp):
        log.rec("Load weight begin. avail mem=94.12 GB", tp=r, ep=r if ep else None)
    log.raw(tqdm("Loading safetensors checkpoint shards", 64))
    log.tick(95)
    for r in range(tp):
        log.rec(f"Load weight end. elapsed=95.{r}1 s, type=DeepseekV3ForCausalLM, quant=compressed-tensors, avail mem=21.{30 + r} GB, mem usage=72.8{r} GB.", tp=r, ep=r if ep else None)
    for r in range(tp):
        log.rec("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 412160, KV size: 8.31 GB", tp=r, ep=r if ep else None)
    for r in range(tp):
        log.rec("Memory pool end. avail mem=11.02 GB", tp=r, ep=r if ep else None)
    phase = "verify" if spec else "decode"
    for r in range(tp):
        log.rec(f"Capture target {phase} CUDA graph begin. backend=full, num_tokens_per_req={4 if spec else 1}, avail mem=10.95 GB", tp=r, ep=r if ep else None)
    if stop_at_capture:
        return
    log.raw(tqdm("Capturing batches (bs=128 avail_mem=10.41 GB)", 52))
    log.tick(21)
    for r in range(tp):
        log.rec(f"Capture target {phase} CUDA graph end. bs=[1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 40, 44, 48, 52, 56, 60, 64, 72, 80, 88, 96, 104, 112, 120, 128], elapsed=21.40 s, mem usage=0.9{r} GB, avail mem=9.98 GB.", tp=r, ep=r if ep else None)
    log.rec("max_total_num_tokens=412160, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=128, context_len=262144, available_gpu_mem=9.98 GB", tp=0, ep=0 if ep else None)
    log.rec("INFO:     Started server process [81234]")
    log.rec("INFO:     Waiting for application startup.")
    log.rec("INFO:     Application startup complete.")
    log.rec("INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)")
    log.tick(1)


def ready(log: Log, tp0_ep: bool = False) -> None:
    log.rec("Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00", tp=0, ep=0 if tp0_ep else None)
    log.rec("INFO:     127.0.0.1:40170 - \"POST /generate HTTP/1.1\" 200 OK")
    log.rec("The server is fired up and ready to roll!")
    log.ready = True


PROMPTS = [
    "Why does my GPU run out of memory when I raise the batch size?",
    "Explain what an AssertionError means in Python.",
    "My job died with KeyError: 12 and CUDA out of memory, what now?",
    "Write a haiku about NCCL watchdog timeouts.",
    "What does 'Scheduler hit an exception' mean in SGLang?",
    "Summarise: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
]


def serve(log: Log, rounds: int, tp0_ep: bool = False, spec: bool = True, rng: random.Random | None = None,
          log_requests: bool = True, dp: int | None = None, ray: str | None = None, it0: int | None = None,
          old: bool = False) -> None:
    rng = rng or random.Random(7)
    for i in range(rounds):
        if log_requests and not old:
            p = PROMPTS[i % len(PROMPTS)]
            log.rec(f"Receive: obj=GenerateReqInput(rid='{rng.getrandbits(64):016x}', text={p!r}, "
                    "sampling_params={'temperature': 0.0, 'max_new_tokens': 256, 'ignore_eos': True}, stream=True)")
        port = 40000 + rng.randrange(9999)
        log.rec(f"INFO:     127.0.0.1:{port} - \"POST /generate HTTP/1.1\" 200 OK")
        sep = "." if old else ","
        it = f" [{it0 + i * 40}]" if it0 is not None else ""
        log.rec(f"Prefill batch{it}{sep} #new-seq: 1, #new-token: {26 + i % 9}, #cached-token: {i % 3}, token usage: 0.00, "
                f"#running-req: 0, #queue-req: 0" + (", " if old else ", #pending-token: 0, cuda graph: False, ")
                + f"input throughput (token/s): {120 + i:.2f}" + (", " if old else ""),
                tp=0 if dp is None else 0, dp=dp, ep=0 if tp0_ep else None, ray=ray)
        for _ in range(3):
            log.tick(0.45)
            gen = round(88.5 + rng.random() * 1.4, 2)
            tok = 40 + rng.randrange(200)
            if old:
                acc_part = f"accept len: {2.4 + rng.random() * 0.4:.2f}, " if spec else ""
                line = (f"Decode batch{it}. #running-req: 1, #token: {tok}, token usage: 0.00, {acc_part}"
                        f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0, ")
                acc = float(acc_part.split(": ")[1].rstrip(", ")) if spec else None
            else:
                acc = round(3.0 + rng.random() * 0.5, 2)
                acc_part = f"accept len: {acc:.2f}, accept rate: {(acc - 1) / 3:.2f}, " if spec else ""
                line = (f"Decode batch{it}, #running-req: 1, #token: {tok}, token usage: 0.00, {acc_part}"
                        f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0")
            log.rec(line, tp=0, dp=dp, ep=0 if tp0_ep else None, ray=ray)
            log.decode += 1
            log.gen[dp] = float(f"{gen:.2f}")
            if spec and acc is not None:
                log.acc[dp] = float(f"{acc:.2f}")
        if log_requests and not old:
            log.rec(f"Finish: obj=GenerateReqInput(rid='{rng.getrandbits(64):016x}', text={PROMPTS[(i + 2) % len(PROMPTS)]!r}), "
                    "out={'text': ' It usually means the process ran out of memory; try --mem-fraction-static 0.7.', 'meta_info': {'finish_reason': {'type': 'length', 'length': 256}}}")
        log.tick(0.3)


def scheduler_tb(frames: list[tuple[str, int, str, str]], final: str, site: str = SITE) -> str:
    """A traceback body as Python prints it (after "Traceback (most recent call last):")."""
    out = []
    for path, line, func, code in frames:
        out.append(f'  File "{site}/{path}", line {line}, in {func}')
        out.append(f"    {code}")
    return "\n".join(out) + "\n" + final


RUN_SCHED = ("sglang/srt/managers/scheduler.py", 6367, "run_scheduler_process", "scheduler.event_loop_overlap()")
INIT_SCHED = ("sglang/srt/managers/scheduler.py", 6351, "run_scheduler_process",
              "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)")
CTXLIB = ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)")


def sched_exc(log: Log, rank: int, body: str, ep: bool = False, dp: int | None = None) -> int:
    return log.rec("Scheduler hit an exception: Traceback (most recent call last):\n" + body,
                   tp=rank, ep=rank if ep else None, dp=dp)


# ------------------------------------------------------------------ scenarios


def healthy_0523_spec() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 12)
    log.rec("INFO:     127.0.0.1:39990 - \"GET /server_info HTTP/1.1\" 200 OK")
    log.write("healthy_0523_tp8_eagle3")


def healthy_old_0410() -> None:
    log = Log(day="2025-06-02")
    log.rec(SERVER_ARGS_OLD.format(tp=8))
    for r in range(8):
        log.rec("Init torch distributed begin.", tp=r)
    for r in range(8):
        log.rec("Init torch distributed ends. mem usage=0.09 GB", tp=r)
    for r in range(8):
        log.rec("Load weight begin. avail mem=78.50 GB", tp=r)
    log.raw(tqdm("Loading safetensors checkpoint shards", 30))
    for r in range(8):
        log.rec("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.12 GB, mem usage=17.38 GB.", tp=r)
    for r in range(8):
        log.rec("KV Cache is allocated. #tokens: 1733112, K size: 26.45 GB, V size: 26.45 GB", tp=r)
    for r in range(8):
        log.rec("Capture cuda graph begin. This can take up to several minutes. avail mem=8.12 GB", tp=r)
    log.raw(tqdm("Capturing batches (avail_mem=7.90 GB)", 35))
    for r in range(8):
        log.rec("Capture cuda graph end. Time elapsed: 7.23 s. mem usage=0.93 GB. avail mem=7.19 GB.", tp=r)
    log.rec("max_total_num_tokens=1733112, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072", tp=0)
    log.rec("INFO:     Started server process [5521]")
    log.rec("INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)")
    log.rec("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ", tp=0)
    log.rec("INFO:     127.0.0.1:51234 - \"POST /generate HTTP/1.1\" 200 OK")
    log.rec("The server is fired up and ready to roll!")
    log.ready = True
    serve(log, 10, spec=False, old=True, log_requests=False)
    log.write("healthy_0410_tp8_old_spelling")


def healthy_dp_ray() -> None:
    log = Log(ms=True)
    ray = "SGLangEngine pid=24817, ip=10.0.0.2"
    log.raw(f"({ray}) [{log.ts()}] server_args={{'model_path': 'deepseek-ai/DeepSeek-V3', 'tp_size': 8, 'dp_size': 2, 'attn_dp_size': 2, 'enable_dp_attention': True}}")
    for dp in (0, 1):
        for r in range(4):
            tp = dp * 4 + r
            log.rec("Load weight end. elapsed=88.00 s, type=DeepseekV3ForCausalLM, avail mem=20.10 GB, mem usage=70.00 GB.", tp=tp, dp=dp, ep=tp, ray=ray)
    log.rec("The server is fired up and ready to roll!", ray=ray)
    log.ready = True
    rng = random.Random(3)
    for i in range(8):
        for dp in (0, 1):
            log.tick(0.2)
            gen = round(600 + rng.random() * 50, 2)
            log.rec(f"Decode batch [{4000 + 40 * i}], #running-req: 24, #token: 18000, token usage: 0.04, accept len: 2.8{dp}, accept rate: 0.60, "
                    f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0", tp=dp * 4, dp=dp, ep=dp * 4, ray=ray)
            log.decode += 1
            log.gen[dp] = gen
            log.acc[dp] = float(f"2.8{dp}")
    log.write("healthy_dp2_ray_iter")


def decoys() -> None:
    log = Log()
    startup_0523(log)
    # advice and capability warnings that name failure words
    log.rec("TorchSymmMemCommunicator: Device capability (12, 0) not supported, communicator is not available.", tp=0)
    log.rec("--enable-flashinfer-allreduce-fusion is deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead.")
    log.rec("WARNING: KV cache is small (412160 tokens). If requests fail with out of memory, try --mem-fraction-static 0.85.")
    log.rec("The mem_fraction_static is too large for this GPU; out of memory errors are likely. Try --mem-fraction-static=0.7.", tp=0)
    ready(log)
    serve(log, 6)
    log.rec("INFO:     127.0.0.1:40100 - \"GET /v1/models/out-of-memory HTTP/1.1\" 404 Not Found")
    log.rec("INFO:     127.0.0.1:40101 - \"POST /debug/AssertionError?rank=3 HTTP/1.1\" 404 Not Found")
    log.rec("Receive: obj=GenerateReqInput(text='Traceback (most recent call last):\\n  File \"x.py\"\\nAssertionError: boom', stream=True)")
    log.rec("Receive: obj=GenerateReqInput(text='Scheduler watchdog timeout and KV cache pool is full. Retract requests.', stream=True)")
    log.rec("Cache flushed successfully!")
    log.raw("gpu-node-1:4100:4187 [0] NCCL INFO [Service thread] Connection closed by localRank 0")
    log.raw(tqdm("Capturing batches (bs=4 avail_mem=1.02 GB)", 8))
    serve(log, 3)
    log.write("decoys_0523")


def assertion_8ranks() -> None:
    log = Log()
    startup_0523(log, ep=True, spec=False)
    ready(log, tp0_ep=True)
    serve(log, 3, tp0_ep=True, spec=False)
    final = "AssertionError: hidden_states.shape[0]=8192 > self.max_num_tokens_per_rank=4096"
    body = scheduler_tb([
        RUN_SCHED, CTXLIB,
        ("sglang/srt/managers/scheduler.py", 1432, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
        ("sglang/srt/layers/moe/token_dispatcher/flashinfer.py", 212, "dispatch",
         "assert hidden_states.shape[0] <= self.max_num_tokens_per_rank, \"out of memory guard\""),
    ], final)
    order = [3, 0, 5, 1, 7, 2, 6, 4]
    first = None
    rng = random.Random(11)
    for i, r in enumerate(order):
        line = sched_exc(log, r, body, ep=True)
        first = first or line
        if i % 3 == 1:  # other ranks keep logging in between
            log.rec("Decode batch, #running-req: 4, #token: 2210, token usage: 0.01, cuda graph: True, gen throughput (token/s): 301.22, #queue-req: 0", tp=0, ep=0)
            log.decode += 1
            log.gen[None] = 301.22
        if rng.random() < 0.5:
            log.rec(f"INFO:     127.0.0.1:{41000 + i} - \"POST /generate HTTP/1.1\" 200 OK")
    log.incident("assertion", list(range(8)), first, final)
    log.death(log.rec(SIGQUIT_0523), SIGQUIT_0523)
    log.write("assertion_8ranks_ep_0523")


def oom_runtime() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 4)
    first = None
    for r in (5, 2):
        final = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU {r} has a total capacity of 94.97 GiB "
                 f"of which 1.{r}1 GiB is free. Including non-PyTorch memory, this process has 93.{r}0 GiB memory in use. "
                 "Of the allocated memory 88.12 GiB is allocated by PyTorch, and 3.91 GiB is reserved by PyTorch but unallocated. "
                 "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                 "fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
        body = scheduler_tb([
            RUN_SCHED, CTXLIB,
            ("sglang/srt/managers/scheduler.py", 1440, "event_loop_overlap", "self.process_batch_result(tmp_batch, tmp_result)"),
            ("sglang/srt/layers/logits_processor.py", 512, "_get_logits", "logits = torch.matmul(hidden_states, lm_head.weight.T)"),
        ], final)
        line = sched_exc(log, r, body)
        if first is None:
            first, first_final = line, final
    log.incident("oom", [2, 5], first, first_final)
    log.death(log.rec(SIGQUIT_0523), SIGQUIT_0523)
    log.write("oom_torch_runtime_2ranks_0523")


def prefill_oom() -> None:
    log = Log()
    startup_0523(log, spec=False)
    ready(log)
    serve(log, 2, spec=False)
    msg = "Prefill out of memory. Try to lower your batch size.\nTry to allocate 9216 tokens.\nAvailable tokens: 8120\nself.token_to_kv_pool_allocator.available_size()=8120"
    first = None
    for r in range(8):
        line = log.rec(msg, tp=r)
        first = first or line
    for r in range(8):
        sched_exc(log, r, scheduler_tb([
            RUN_SCHED,
            ("sglang/srt/managers/schedule_batch.py", 1620, "prepare_for_extend", "out_cache_loc = alloc_for_extend(self)"),
            ("sglang/srt/mem_cache/allocation.py", 239, "alloc_token_slots", "raise RuntimeError(error_msg)"),
        ], "RuntimeError: " + msg))
    log.incident("oom", list(range(8)), first, "RuntimeError: Prefill out of memory. Try to lower your batch size.")
    log.death(log.rec(SIGQUIT_0523), SIGQUIT_0523)
    log.write("oom_prefill_kv_8ranks_0523")


def kv_startup_old() -> None:
    log = Log(day="2025-05-20")
    log.rec(SERVER_ARGS_OLD.format(tp=8).replace("0.88", "0.95"))
    for r in range(8):
        log.rec("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=2.12 GB, mem usage=17.38 GB.", tp=r)
    first = None
    final = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    for r in (0, 4, 1, 5, 2, 6, 3, 7):
        line = sched_exc(log, r, scheduler_tb([
            ("sglang/srt/managers/scheduler.py", 2311, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)"),
            ("sglang/srt/model_executor/model_runner.py", 910, "init_memory_pool", "raise RuntimeError("),
        ], final, OLD_SITE))
        first = first or line
    log.incident("oom", list(range(8)), first, final)
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.raw("Killed")
    log.write("oom_kv_pool_startup_old")


def capture_fail_then_assert() -> None:
    """The campaign's expert-parallel trial: AssertionError, then (relaunched) out of memory."""
    log = Log()
    startup_0523(log, ep=True)
    ready(log, tp0_ep=True)
    serve(log, 2, tp0_ep=True)
    final = "AssertionError: flashinfer a2a requires num_experts % ep_size == 0"
    first = None
    for r in range(8):
        line = sched_exc(log, r, scheduler_tb([
            RUN_SCHED,
            ("sglang/srt/layers/moe/token_dispatcher/flashinfer.py", 98, "__init__", "assert self.num_experts % self.ep_size == 0"),
        ], final), ep=True)
        first = first or line
    log.incident("assertion", list(range(8)), first, final)
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.tick(300)  # the user relaunches with another backend; same log file
    startup_0523(log, ep=True, warn_custom_ar=False, stop_at_capture=True)
    first = None
    cause = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 94.97 GiB of which 301.00 MiB is free."
    final = ("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB.\nPossible solutions:\n"
             "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
             "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
             "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled.")
    for r in range(8):
        body = scheduler_tb([
            INIT_SCHED,
            ("sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", 588, "capture", "graph, output = self.capture_one_batch_size(bs, forward)"),
        ], cause) + "\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n" + scheduler_tb([
            INIT_SCHED,
            ("sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", 603, "__init__", "raise Exception("),
        ], final)
        line = sched_exc(log, r, body, ep=True)
        first = first or line
    log.incident("oom", list(range(8)), first, final.split("\n")[0])
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.write("ep_flashinfer_assert_then_capture_oom_0523")


def keyerror_symm() -> None:
    log = Log()
    log.rec(SERVER_ARGS_0523.replace("'enable_torch_symm_mem': False", "'enable_torch_symm_mem': True"))
    nccl_info(log, 8)
    first = None
    for r in (0, 1, 2, 3, 4, 5, 6, 7):
        line = sched_exc(log, r, scheduler_tb([
            INIT_SCHED,
            ("sglang/srt/distributed/parallel_state.py", 377, "__init__", "self.torch_symm_mem_comm = TorchSymmMemCommunicator(group=self.cpu_group, device=self.device)"),
            ("sglang/srt/distributed/device_communicators/torch_symm_mem.py", 71, "__init__",
             "self.max_size = TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability][self.world_size]"),
        ], "KeyError: 12"))
        first = first or line
    log.incident("keyerror", list(range(8)), first, "KeyError: 12")
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.write("keyerror_torch_symm_mem_0523")


def jit_arch() -> None:
    log = Log()
    log.rec("--enable-flashinfer-allreduce-fusion is deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead.")
    log.rec(SERVER_ARGS_0523.replace("'flashinfer_allreduce_fusion_backend': None", "'flashinfer_allreduce_fusion_backend': 'auto'"))
    nccl_info(log, 8)
    ninja = ("RuntimeError: Ninja build failed. Ninja output:\n"
             "[1/2] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -DTORCH_EXTENSION_NAME=trtllm_comm "
             "-gencode=arch=compute_120a,code=sm_120a -O3 -c trtllm_allreduce_fusion.cu -o trtllm_allreduce_fusion.cuda.o\n"
             "FAILED: trtllm_allreduce_fusion.cuda.o\n"
             "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
             "ninja: build stopped: subcommand failed.")
    first = None
    for r in range(8):
        line = sched_exc(log, r, scheduler_tb([
            INIT_SCHED,
            ("sglang/srt/layers/flashinfer_comm_fusion.py", 88, "ensure_workspace_initialized", "_workspace_manager.initialize(world_size, rank, max_token_num, hidden_dim)"),
            ("flashinfer/jit/core.py", 310, "build_and_load", "self.build(verbose, need_lock=False)"),
            ("flashinfer/jit/cpp_ext.py", 335, "run_ninja", "raise RuntimeError(msg) from e"),
        ], ninja))
        first = first or line
    log.incident("jit_arch", list(range(8)), first, "nvcc fatal   : Unsupported gpu architecture 'compute_120a'")
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.write("jit_arch_flashinfer_sm120_0523")


def nccl_timeout() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 3)
    log.tick(600)
    work = "WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=7168, NumelOut=7168, Timeout(ms)=600000) ran for 600074 milliseconds before timing out."
    order = [2, 0, 6, 3, 1, 7, 4, 5]
    first = None
    for r in order:
        line = log.raw(f"[rank{r}]:[E0314 09:12:00.41782{r}153 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: {work}")
        first = first or line
        log.raw(f"[rank{r}]:[E0314 09:12:00.418011932 ProcessGroupNCCL.cpp:2271] [PG ID 2 PG GUID 3 Rank {r}]  failure detected by watchdog at work sequence id: 48213 PG status: last enqueued work: 48213, last completed work: 48212")
    for r in order:
        log.raw(f"[rank{r}]:[E0314 09:12:00.418034611 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.")
        log.raw(f"[rank{r}]:[E0314 09:12:00.418041000 ProcessGroupNCCL.cpp:684] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
    term = log.raw("terminate called after throwing an instance of 'c10::DistBackendError'\n"
            f"  what():  [PG ID 2 PG GUID 3 Rank 2] Process group watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: {work}\n"
            "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):\n"
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3a2c1b9e28 in /usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)\n"
            "frame #1: <unknown function> + 0x1229f6e (0x7f3a2d40bf6e in /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so)")
    log.raw("Fatal Python error: Aborted")
    nccl = log.incident("nccl", list(range(8)), first, f"Watchdog caught collective operation timeout: {work}")
    log.tick(1)
    msg = "Subprocess scheduler_2 (pid=81302) crashed with exit code -6. Triggering SIGQUIT for cleanup..."
    # the death starts at terminate (rank 2's process); the exit code is the line that says most
    log.incident("crash", [2], term, msg, log.rec(msg), nccl)
    log.rec(SIGQUIT_0523)  # joins the crash
    log.write("nccl_watchdog_timeout_8ranks_0523")


def torchrun_distbackend_old() -> None:
    log = Log(day="2025-02-11")
    log.rec(SERVER_ARGS_OLD.format(tp=4))
    for r in range(4):
        log.rec("Init torch distributed begin.", tp=r)
    final = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
             "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5")
    tb = ["Traceback (most recent call last):",
          f'  File "{OLD_SITE}/sglang/srt/managers/scheduler.py", line 1802, in run_scheduler_process',
          "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
          f'  File "{OLD_SITE}/sglang/srt/distributed/parallel_state.py", line 1021, in init_distributed_environment',
          "    torch.distributed.barrier(group=_WORLD.cpu_group)",
          final]
    first = None
    # four processes print line by line: the lines interleave
    for k, text in enumerate(tb):
        for r in (1, 3, 0, 2):
            line = log.raw(f"[rank{r}]: {text}")
            if k == 0 and first is None:
                first = line
    log.incident("nccl", [0, 1, 2, 3], first, final)
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.write("nccl_distbackend_torchrun_prefix_old")


def hang() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 2)
    log.tick(300)
    first = None
    for r in range(8):
        line = log.rec(f"Pyspy dump for PID {81300 + r}:\nProcess {81300 + r}: sglang::scheduler_TP{r}\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
                       f"Thread {81300 + r} (idle): \"MainThread\"\n    all_reduce (torch/distributed/distributed_c10d.py:2806)\n"
                       "    event_loop_overlap (sglang/srt/managers/scheduler.py:1432)", tp=r)
        first = first or line
    wd = "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    first = None
    for r in range(8):
        line = log.rec(wd, tp=r)
        first = first or line
    log.incident("hang", list(range(8)), first, wd)
    log.death(log.rec(SIGQUIT_0523), SIGQUIT_0523)
    log.write("hang_scheduler_watchdog_0523")


def crash_init_oomkiller() -> None:
    log = Log()
    startup_0523(log)
    # weights load, then the host kills one rank
    msg = ("Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is "
           "the OS OOM killer. Run `dmesg -T` to check for OOM killer invocations.")
    line = log.rec(msg)
    log.rec("Initialization failed. Please see the error messages above.")  # joins; the exit code stays shown
    log.incident("crash", [3], line, msg, line)
    log.write("crash_oom_killer_init_0523")


def crash_serving() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 5)
    msg = "Subprocess scheduler_5 (pid=81305) crashed with exit code -9. Triggering SIGQUIT for cleanup..."
    line = log.rec(msg)
    log.rec("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")  # joins the crash
    log.incident("crash", [5], line, msg, line)
    log.write("crash_subprocess_sigkill_serving_0523")


def kv_pressure() -> None:
    log = Log()
    startup_0523(log)
    ready(log)
    serve(log, 2)
    first = None
    for k in range(4):
        msg = f"KV cache pool is full. Retract requests. #retracted_reqs: {k + 1}, #new_tokens_gained: {1450 + k}, #new_token_ratio: 0.4120 -> 0.5390"
        line = log.rec(msg, tp=0)
        if first is None:
            first, first_msg = line, msg
        serve(log, 1)
    log.incident("kv_pressure", [0], first, first_msg)
    log.write("kv_pressure_retract_0523")


def kv_pressure_old() -> None:
    """Older releases logged retraction as "Decode out of memory happened": KV pressure, not an OOM."""
    log = Log(day="2025-04-10")
    log.rec(SERVER_ARGS_OLD.format(tp=8))
    log.rec("The server is fired up and ready to roll!")
    log.ready = True
    serve(log, 2, spec=False, old=True, log_requests=False)
    first = log.rec("Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4120 -> 0.5390", tp=0)
    serve(log, 1, spec=False, old=True, log_requests=False)
    log.rec("Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.3800 -> 0.4900", tp=0)
    serve(log, 2, spec=False, old=True, log_requests=False)
    log.incident("kv_pressure", [0], first, "Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4120 -> 0.5390")
    log.write("kv_pressure_retract_old_spelling")


def generic_error_old() -> None:
    log = Log(day="2025-09-01")
    log.rec(SERVER_ARGS_OLD.format(tp=2))
    log.rec("The server is fired up and ready to roll!")
    log.ready = True
    serve(log, 2, spec=False, old=True, log_requests=False)
    final = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!"
    first = None
    for r in (1, 0):
        line = sched_exc(log, r, scheduler_tb([
            ("sglang/srt/managers/scheduler.py", 2311, "run_scheduler_process", "scheduler.event_loop_overlap()"),
            ("sglang/srt/layers/sampler.py", 140, "forward", "probs = torch.softmax(logits, dim=-1)"),
        ], final.replace("cuda:1", f"cuda:{r}"), OLD_SITE))
        if first is None:
            first, first_msg = line, final.replace("cuda:1", f"cuda:{r}")
    log.incident("error", [0, 1], first, first_msg)
    log.death(log.rec(SIGQUIT_OLD), SIGQUIT_OLD)
    log.write("error_generic_device_mismatch_old")


def argparse_error() -> None:
    log = Log()
    log.raw(f"{SITE}/sglang/launch_server.py:12: UserWarning: 'python -m sglang.launch_server' is still supported, 'sglang serve' is the recommended entry point.")
    log.raw("  warnings.warn(")
    first = log.raw("usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n"
                    "                        [--host HOST] [--port PORT] [--tp-size TP_SIZE]")
    msg = "launch_server.py: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"
    log.raw(msg)
    log.incident("error", [], first, msg)
    log.write("error_argparse_ambiguous_flag_0523")


SCENARIOS = [healthy_0523_spec, healthy_old_0410, healthy_dp_ray, decoys, assertion_8ranks, oom_runtime,
             prefill_oom, kv_startup_old, capture_fail_then_assert, keyerror_symm, jit_arch, nccl_timeout,
             torchrun_distbackend_old, hang, crash_init_oomkiller, crash_serving, kv_pressure,
             kv_pressure_old, generic_error_old, argparse_error]

if __name__ == "__main__":
    for old in HERE.glob("*.log"):
        old.unlink()
    for old in HERE.glob("*.expected.json"):
        old.unlink()
    for scenario in SCENARIOS:
        scenario()
    print(f"wrote {len(SCENARIOS)} logs to {HERE}")

"""The simulator held to the real server: the same requests to real SGLang 0.5.23 (CPU, tiny
model) and to ``tuiapp.sim.server --tp 1`` with the same flags and checkpoint, and the
shapes tuiapp relies on compared. Differences that are intended (a GPU box modelled against a
CPU server) are named here and in docs/real-server.md.
"""

from __future__ import annotations

import re
import signal
import time

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from real_sglang import READY_LINE, RealServer, model_dir, venv

from tuiapp.logwatch.batchstats import parse_batch_line
from tuiapp.logwatch.prefix import parse_sglang_prefix
from tuiapp.server.metrics_poll import _WANTED
from tuiapp.server.ports import free_port
from tuiapp.sim.process import SimProcess

pytestmark = [pytest.mark.real_sglang, pytest.mark.timeout(600)]  # a real start is 40-60 s, more on a loaded box

# What a GPU server (the simulator's model) says where the CPU server says something else.
INTENDED = {
    "graph_label": ("cuda graph", "cpu graph"),  # Prefill/Decode lines
    "mem_label": ("available_gpu_mem", "available_cpu_mem"),  # the max_total_num_tokens line
}
# server_info fields the simulator resolves as a GPU server does (CUDA graphs on); the CPU
# server leaves them unset because torch_native attention turns graphs off.
GPU_RESOLVED_ARGS = {"cuda_graph_backend_decode", "cuda_graph_bs_decode", "cuda_graph_max_bs_decode"}


def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    return type(v).__name__


def differences(sim, real, path="") -> list[str]:
    """Where the shapes differ; an empty list on either side matches any list."""
    out: list[str] = []
    if isinstance(sim, dict) and isinstance(real, dict):
        for k in sorted(set(sim) | set(real)):
            if k not in sim:
                out.append(f"{path}.{k}: only in real")
            elif k not in real:
                out.append(f"{path}.{k}: only in sim")
            else:
                out += differences(sim[k], real[k], f"{path}.{k}")
    elif isinstance(sim, list) and isinstance(real, list):
        if sim and real:
            out += differences(sim[0], real[0], path + "[]")
    elif sim != real:
        out.append(f"{path}: sim {sim} real {real}")
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    v = venv()
    folder = tmp_path_factory.mktemp("conformance")
    flags = ["--model-path", str(model_dir(v)), "--device", "cpu", "--attention-backend", "torch_native",
             "--sleep-on-idle", "--max-total-tokens", "65536", "--enable-metrics", "--log-level", "info"]
    real = RealServer(v, folder / "real.log", free_port())
    sim = SimProcess([*flags, "--tp", "1"], speed=20)
    try:
        sim.wait_ready(timeout_s=60)
        real.wait_ready()
        yield real, sim
    finally:
        real.stop()
        sim.stop()


def both(pair, fn):
    real, sim = pair
    return fn(sim.url), fn(real.url)


def sse(url: str, path: str, body: dict) -> list[bytes]:
    with httpx.stream("POST", url + path, json=body, timeout=60) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return [line.encode() for line in r.iter_lines() if line]


def events(lines: list[bytes]) -> list[dict]:
    assert lines[-1] == b"data: [DONE]"
    assert all(line.startswith(b"data: ") for line in lines)
    return [orjson.loads(line[6:]) for line in lines[:-1]]


GEN = {"text": "def hello(", "sampling_params": {"max_new_tokens": 8, "temperature": 0, "ignore_eos": True}, "stream": True}


def test_generate_stream_cumulative_chunks_and_meta_info(pair):
    sim, real = both(pair, lambda url: events(sse(url, "/generate", GEN)))
    for chunks in (sim, real):
        assert 1 <= len(chunks) <= 8  # a loaded box may coalesce tokens into fewer events
        for a, b in zip(chunks, chunks[1:], strict=False):  # cumulative text and ids
            assert b["text"].startswith(a["text"]) and b["output_ids"][:len(a["output_ids"])] == a["output_ids"]
            assert b["meta_info"]["completion_tokens"] > a["meta_info"]["completion_tokens"]
        final = chunks[-1]
        assert final["meta_info"]["finish_reason"] == {"type": "length", "length": 8}
        assert final["meta_info"]["completion_tokens"] == len(final["output_ids"]) == 8
        assert all(c["meta_info"]["finish_reason"] is None for c in chunks[:-1])
    for which in (0, len(sim) // 2, -1):
        assert differences(shape(sim[which]), shape(real[which])) == [], which
        assert list(sim[which]["meta_info"]) == list(real[which]["meta_info"]), which  # key order too


def test_generate_non_stream(pair):
    body = dict(GEN, stream=False)
    sim, real = both(pair, lambda url: httpx.post(url + "/generate", json=body, timeout=60).json())
    assert differences(shape(sim), shape(real)) == []
    assert sim["meta_info"]["completion_tokens"] == real["meta_info"]["completion_tokens"] == 8


@pytest.mark.parametrize("path,body", [
    ("/v1/chat/completions", {"model": "default", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 10,
                              "temperature": 0, "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}),
    ("/v1/completions", {"model": "default", "prompt": "for i in", "max_tokens": 8, "temperature": 0, "ignore_eos": True,
                         "stream": True, "stream_options": {"include_usage": True}}),
])
def test_openai_streams_with_usage(pair, path, body):
    sim, real = both(pair, lambda url: events(sse(url, path, body)))
    n = body["max_tokens"]
    for chunks in (sim, real):
        *content, usage = chunks
        assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == n
        assert usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + n
        assert content[-1]["choices"][0]["finish_reason"] == "length"
        assert all(c["choices"][0]["finish_reason"] is None for c in content[:-1])
    # by kind, as a stream may coalesce tokens: the first, a content chunk, the finish, the usage
    def kinds(chunks):
        out = {"first": chunks[0], "finish": chunks[-2], "usage": chunks[-1]}
        middle = [c for c in chunks[1:-2] if c["choices"][0].get("delta", c["choices"][0]).get("content" if "delta" in c["choices"][0] else "text")]
        if middle:
            out["content"] = middle[0]
        return out
    sim_k, real_k = kinds(sim), kinds(real)
    assert set(sim_k) == set(real_k) == {"first", "content", "finish", "usage"}
    for kind in sim_k:
        assert differences(shape(sim_k[kind]), shape(real_k[kind])) == [], (kind, orjson.dumps(real_k[kind]).decode())
    full = dict(body, stream=False)
    full.pop("stream_options")
    sim_full, real_full = both(pair, lambda url: httpx.post(url + path, json=full, timeout=60).json())
    assert differences(shape(sim_full), shape(real_full)) == []


def test_info_endpoints(pair):
    for path in ("/v1/models", "/model_info"):
        sim, real = both(pair, lambda url, path=path: httpx.get(url + path, timeout=10).json())
        assert differences(shape(sim), shape(real)) == [], path
    sim, real = both(pair, lambda url: httpx.get(url + "/server_info", timeout=10).json())
    state_s, state_r = sim["internal_states"][0], real["internal_states"][0]
    # every server arg the simulator reports exists in real 0.5.23, with the same type
    assert set(state_s) - set(state_r) == set() and set(sim) - set(real) == set()
    common = {k: state_s[k] for k in state_s if k not in GPU_RESOLVED_ARGS}
    assert differences(shape(common), shape({k: state_r[k] for k in common})) == []
    top = {k for k in real if k not in state_r} - {"internal_states"}  # the non-arg keys of /server_info
    assert differences(shape({k: sim[k] for k in top}), shape({k: real[k] for k in top})) == []
    assert sim["max_req_input_len"] == real["max_req_input_len"] and sim["version"] == real["version"]


def test_health_flush_and_metrics(pair):
    def get(url):
        health = httpx.get(url + "/health", timeout=10)
        flush = httpx.post(url + "/flush_cache", timeout=10)
        return health, flush
    (h_s, f_s), (h_r, f_r) = both(pair, get)
    assert (h_s.status_code, h_s.content, h_s.headers.get("content-type")) == (h_r.status_code, h_r.content, h_r.headers.get("content-type"))
    assert (f_s.status_code, f_s.text, f_s.headers.get("content-type")) == (f_r.status_code, f_r.text, f_r.headers.get("content-type"))

    def families(url):
        r = httpx.get(url + "/metrics", timeout=10)
        assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        return {f.name: (f.type, {k for s in f.samples for k in s.labels if k != "le"})
                for f in text_string_to_metric_families(r.text)}
    sim, real = both(pair, families)
    assert {n: sim[n] for n in sim if sim[n] != real.get(n)} == {}  # the sim invents no name, type or label
    assert set(_WANTED) <= set(real) and set(_WANTED) <= set(sim)  # what the poller reads, both serve


def test_refusals_same_reason(pair):
    long = "x " * 5000
    sim, real = both(pair, lambda url: httpx.post(url + "/generate", json={"text": long, "sampling_params": {"max_new_tokens": 4}}, timeout=60))
    assert sim.status_code == real.status_code == 400
    pattern = r"The input \(\d+ tokens\) is longer than the model's context length \(4096 tokens\)\."
    assert re.fullmatch(pattern, sim.json()["error"]["message"]) and re.fullmatch(pattern, real.json()["error"]["message"])
    body = {"model": "default", "prompt": long, "max_tokens": 4}
    sim, real = both(pair, lambda url: httpx.post(url + "/v1/completions", json=body, timeout=60))
    assert sim.status_code == real.status_code == 400
    assert set(sim.json()) == set(real.json()) == {"object", "message", "type", "param", "code"}
    bad = {"text": "x", "sampling_params": {"max_new_tokens": 4, "bogus": 1}}
    sim, real = both(pair, lambda url: httpx.post(url + "/generate", json=bad, timeout=60))
    assert (sim.status_code, sim.json()) == (real.status_code, real.json())


def _messages(log: str) -> list[str]:
    """The messages of a log's dated lines. A line may follow a progress bar's last frame on
    the same line (tqdm's closing newline and the log line race on a busy box): a message
    starts at the line's first date prefix."""
    return [m.group(1) for line in log.splitlines()
            if (m := re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (.*)", line))]


def _fields(message: str) -> list[str]:
    return [part.partition(": ")[0] for part in message.split(", ")[1:]]


def test_log_grammar_then_sigterm_shutdown(pair):
    real, sim = pair
    # a 96-token request so both print Decode lines (every 40 steps)
    body = {"text": "import os\n", "sampling_params": {"max_new_tokens": 96, "temperature": 0, "ignore_eos": True}}
    both(pair, lambda url: httpx.post(url + "/generate", json=body, timeout=120).json())
    time.sleep(0.5)
    for proc in (sim.proc, real.proc):
        proc.send_signal(signal.SIGTERM)
    sim.proc.wait(timeout=30)
    real.proc.wait(timeout=60)
    time.sleep(0.3)
    logs = {"sim": sim.stderr + sim.stdout, "real": real.log}
    for name, text in logs.items():
        lines = text.splitlines()
        msgs = _messages(text)
        assert all(parse_sglang_prefix(line) is not None for line in lines if re.match(r"\[\d{4}-", line)), name
        # startup
        for pattern in (r"server_args=\{'model_path': ", r"Load weight begin\. avail mem=[\d.]+ GB",
                        # "mem usage=-0.00 GB" too: on CPU, avail mem can read a hair higher after the load
                        r"Load weight end\. elapsed=[\d.]+ s, type=LlamaForCausalLM, .*avail mem=[\d.]+ GB, mem usage=-?[\d.]+ GB\.",
                        r"KV Cache is allocated\. dtype: torch\.\w+, #tokens: 65536, ",
                        r"max_total_num_tokens=65536, chunked_prefill_size=\d+, max_prefill_tokens=16384, max_running_requests=\d+, context_len=4096, available_(gpu|cpu)_mem=[\d.]+ GB",
                        r"INFO:     Uvicorn running on http://127\.0\.0\.1:\d+ \(Press CTRL\+C to quit\)",
                        re.escape(READY_LINE),
                        r"SIGTERM received\. signum=None frame=None\. Draining requests and shutting down\.\.\.",
                        r"Gracefully exiting\.\.\. Remaining number of requests 0\. ",
                        r"INFO:     Shutting down", r"INFO:     Application shutdown complete\.",
                        r"INFO:     Finished server process \[\d+\]"):
            assert any(re.match(pattern, m) for m in msgs), (name, pattern)
        ready_at = next(i for i, m in enumerate(msgs) if m == READY_LINE)
        assert ready_at > next(i for i, m in enumerate(msgs) if m.startswith("INFO:     Uvicorn running")), name
    grammar = {}
    for name, text in logs.items():
        msgs = _messages(text)
        batch = {}
        for kind in ("Prefill batch", "Decode batch"):
            lines = [m for m in msgs if m.startswith(kind + ", ")]
            assert lines, (name, kind)
            parsed = [parse_batch_line(m) for m in lines]
            assert all(p is not None for p in parsed), (name, kind)
            batch[kind] = (_fields(lines[-1]), sorted(parsed[-1][1]))
        grammar[name] = batch
    sim_graph, real_graph = INTENDED["graph_label"]
    for kind in ("Prefill batch", "Decode batch"):
        sim_fields, sim_parsed = grammar["sim"][kind]
        real_fields, real_parsed = grammar["real"][kind]
        assert [real_graph if f == sim_graph else f for f in sim_fields] == real_fields, kind
        # the watcher reads the same figures from both, less the graph flag only a GPU server has
        assert [f for f in sim_parsed if f != "cuda_graph"] == real_parsed, kind
    assert real.proc.returncode is not None and sim.proc.returncode == 0

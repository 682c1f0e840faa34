"""The simulator's SGLang HTTP API: /generate, OpenAI paths, info, flush, metrics, api key, /sim/gpus."""

import threading
import time

import httpx
import orjson
import pytest

from tuiapp.sim.model import GPU_MEM_TOTAL_BYTES, GPU_NAME
from tuiapp.sim.process import SimProcess

BASE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]
EAGLE = BASE + ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lmsys/Kimi-K2-eagle3"]


@pytest.fixture(scope="module")
def sim():
    with SimProcess(BASE + ["--enable-metrics", "--decode-log-interval", "10", "--sim-step-ms", "2"]) as s:
        s.wait_ready()
        yield s


@pytest.fixture(scope="module")
def spec_sim():
    with SimProcess(EAGLE + ["--decode-log-interval", "5", "--sim-step-ms", "3"]) as s:
        s.wait_ready()
        yield s


def sse(lines) -> list:
    out = []
    for line in lines:
        if line.startswith("data: "):
            payload = line[len("data: "):]
            out.append(payload if payload == "[DONE]" else orjson.loads(payload))
    return out


def stream(url: str, path: str, body: dict, headers=None) -> list:
    with httpx.stream("POST", url + path, json=body, headers=headers, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return sse(r.iter_lines())


def test_generate_stream_is_cumulative_with_final_meta(sim):
    chunks = stream(sim.url, "/generate", {"text": "Hello, world!", "stream": True,
                                           "sampling_params": {"max_new_tokens": 12, "ignore_eos": True, "temperature": 0}})
    assert chunks[-1] == "[DONE]"
    data = chunks[:-1]
    assert len(data) == 12
    for prev, cur in zip(data, data[1:], strict=False):
        assert cur["text"].startswith(prev["text"])
        assert cur["output_ids"][: len(prev["output_ids"])] == prev["output_ids"]
    final = data[-1]["meta_info"]
    assert final["finish_reason"] == {"type": "length", "length": 12}
    assert final["prompt_tokens"] == 6  # toy tokenizer: Hell o , worl d !
    assert final["completion_tokens"] == 12 == len(data[-1]["output_ids"])
    assert final["e2e_latency"] > 0
    assert "e2e_latency" not in data[0]["meta_info"] and data[0]["meta_info"]["finish_reason"] is None
    assert "response_sent_to_client_ts" in data[0]["meta_info"]
    assert "spec_verify_ct" not in final
    assert final["first_token_latency"] > 0 and final["decode_throughput"] > 0  # --enable-metrics extras


def test_generate_non_stream_is_deterministic_and_caches(sim):
    body = {"text": "The same prompt every time", "sampling_params": {"max_new_tokens": 8, "temperature": 0, "ignore_eos": True}}
    a = httpx.post(sim.url + "/generate", json=body, timeout=10).json()
    b = httpx.post(sim.url + "/generate", json=body, timeout=10).json()
    assert a["text"] == b["text"] and len(a["output_ids"]) == 8
    assert b["meta_info"]["cached_tokens"] == b["meta_info"]["prompt_tokens"] - 1


def test_generate_rejects_unknown_sampling_key(sim):
    r = httpx.post(sim.url + "/generate", json={"text": "x", "sampling_params": {"bogus": 1}}, timeout=10)
    assert r.status_code == 400
    assert r.json()["error"].startswith("unknown field `bogus`, expected one of `max_new_tokens`")


def test_generate_rejects_a_batch_it_cannot_answer(sim):
    # an empty batch, or fewer sampling_params than prompts, used to leave the reply waiting forever
    for body in ({"text": []}, {"text": ["a", "b"], "sampling_params": [{"max_new_tokens": 2}]}):
        r = httpx.post(sim.url + "/generate", json=body, timeout=5)
        assert r.status_code == 400
        assert "sampling_params" in r.json()["error"]["message"]


def test_bad_content_length_closes_the_connection_quietly(sim):
    import socket

    for length in (b"abc", b"-5"):
        with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as sock:
            sock.sendall(b"POST /generate HTTP/1.1\r\nhost: x\r\ncontent-length: " + length + b"\r\n\r\n{}")
            assert sock.recv(1024) == b""  # closed, no reply
    assert httpx.get(sim.url + "/health", timeout=5).status_code == 200
    assert "Traceback" not in sim.stderr


def test_eos_stops_early_without_ignore_eos(sim):
    out = httpx.post(sim.url + "/generate", json={"text": "stop me", "sampling_params": {"max_new_tokens": 2000}}, timeout=30).json()
    meta = out["meta_info"]
    assert meta["finish_reason"]["type"] == "stop" and meta["completion_tokens"] < 2000


def test_completions_stream_with_usage(sim):
    chunks = stream(sim.url, "/v1/completions", {"model": "x", "prompt": "Say hi", "max_tokens": 5, "stream": True, "temperature": 0,
                                                 "ignore_eos": True, "stream_options": {"include_usage": True}})
    assert chunks[-1] == "[DONE]"
    usage = chunks[-2]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 5
    content = chunks[:-2]
    assert all(c["object"] == "text_completion" for c in content)
    text = "".join(c["choices"][0]["text"] for c in content)
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    full = httpx.post(sim.url + "/v1/completions", json={"prompt": "Say hi", "max_tokens": 5, "ignore_eos": True, "temperature": 0}, timeout=10).json()
    assert full["choices"][0]["text"] == text and full["usage"]["total_tokens"] == full["usage"]["prompt_tokens"] + 5


def test_chat_stream_roles_and_deltas(sim):
    chunks = stream(sim.url, "/v1/chat/completions", {"model": "x", "messages": [{"role": "user", "content": "hi"}],
                                                      "max_tokens": 4, "stream": True, "ignore_eos": True})
    data = chunks[:-1]
    assert data[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "reasoning_content": None}
    assert data[-1]["choices"][0]["finish_reason"] == "length" and data[-1]["choices"][0]["delta"] == {"reasoning_content": None}  # as real 0.5.23
    assert len([c for c in data if c["choices"][0]["delta"].get("content")]) == 4
    r = httpx.post(sim.url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "ignore_eos": True}, timeout=10)
    msg = r.json()["choices"][0]["message"]
    assert msg["role"] == "assistant" and len(msg["content"].split()) == 3


def test_openai_requires_json_content_type(sim):
    r = httpx.post(sim.url + "/v1/completions", content=b'{"prompt": "x"}', headers={"content-type": "text/plain"}, timeout=10)
    assert r.status_code == 400


def test_models_and_infos(sim):
    models = httpx.get(sim.url + "/v1/models", timeout=10).json()
    assert models["data"][0]["id"] == "moonshotai/Kimi-K2.5"
    for path in ("/model_info", "/get_model_info"):
        info = httpx.get(sim.url + path, timeout=10).json()
        assert info["model_path"] == "moonshotai/Kimi-K2.5" and info["is_generation"] is True
    for path in ("/server_info", "/get_server_info"):
        si = httpx.get(sim.url + path, timeout=10).json()
        assert si["tp_size"] == 8 and si["mem_fraction_static"] == 0.78 and si["cuda_graph_max_bs_decode"] == 128
        assert si["version"] == "0.5.23"
        st = si["internal_states"][0]
        assert "last_gen_throughput" in st and "avg_spec_accept_length" not in st
        assert st["memory_usage"]["token_capacity"] == si["max_total_num_tokens"]
    assert sim.wait_for("Endpoint '/get_server_info' is deprecated")


def test_flush_cache_refuses_while_running(sim):
    assert httpx.post(sim.url + "/flush_cache", timeout=10).status_code == 200
    box = {}

    def long_request():
        box["r"] = httpx.post(sim.url + "/generate", json={"text": "long", "sampling_params": {"max_new_tokens": 400, "ignore_eos": True}}, timeout=30)
    t = threading.Thread(target=long_request)
    t.start()
    time.sleep(0.3)
    busy = httpx.get(sim.url + "/flush_cache", timeout=10)
    t.join()
    assert busy.status_code == 400 and box["r"].status_code == 200
    assert sim.wait_for("Cache not flushed because there are pending requests. #queue-req: 0, #running-req: 1")
    assert sim.wait_for("Cache flushed successfully!")


def test_metrics_text(sim):
    httpx.post(sim.url + "/generate", json={"text": "m", "sampling_params": {"max_new_tokens": 30, "ignore_eos": True}}, timeout=10)
    text = httpx.get(sim.url + "/metrics", timeout=10).text
    for name in ("sglang:gen_throughput", "sglang:num_running_reqs", "sglang:token_usage", "sglang:generation_tokens_total",
                 "sglang:num_requests_total", "sglang:time_to_first_token_seconds_bucket"):
        assert name in text, name
    assert "# TYPE sglang:generation_tokens_total counter" in text  # real 0.5.23 declares the _total name
    gen = [line for line in text.splitlines() if line.startswith("sglang:gen_throughput{")][0]
    assert float(gen.rsplit(" ", 1)[1]) > 0
    assert 'model_name="moonshotai/Kimi-K2.5"' in gen and 'tp_rank="0"' in gen


def test_decode_and_prefill_lines(sim):
    httpx.post(sim.url + "/generate", json={"text": "log me", "sampling_params": {"max_new_tokens": 25, "ignore_eos": True}}, timeout=10)
    assert sim.wait_for("] Decode batch, #running-req: 1, #token: ")
    assert "cuda graph: True, gen throughput (token/s): " in sim.stderr
    assert "] Prefill batch, #new-seq: 1, #new-token: " in sim.stderr
    assert sim.wait_for('"POST /generate HTTP/1.1" 200 OK', stream="stdout")


def test_sim_gpus_counters_and_memory(sim):
    a = httpx.get(sim.url + "/sim/gpus", timeout=10).json()
    httpx.post(sim.url + "/generate", json={"text": "pcie", "sampling_params": {"max_new_tokens": 40, "ignore_eos": True}}, timeout=10)
    b = httpx.get(sim.url + "/sim/gpus", timeout=10).json()
    assert b["t_s"] > a["t_s"] and len(b["gpus"]) == 8
    keys = {"index", "uuid", "name", "mem_total_bytes", "mem_used_bytes", "mem_reserved_bytes", "util_pct", "power_w",
            "power_limit_w", "temp_c", "sm_clock_mhz", "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max",
            "pcie_tx_bytes_total", "pcie_rx_bytes_total"}
    si = httpx.get(sim.url + "/server_info", timeout=10).json()["internal_states"][0]["memory_usage"]
    for ga, gb in zip(a["gpus"], b["gpus"], strict=True):
        assert set(gb) == keys and gb["name"] == GPU_NAME and gb["mem_total_bytes"] == GPU_MEM_TOTAL_BYTES
        assert gb["pcie_tx_bytes_total"] > ga["pcie_tx_bytes_total"] and gb["pcie_rx_bytes_total"] > ga["pcie_rx_bytes_total"]
        assert gb["pcie_gen_max"] == 5 and gb["pcie_width_max"] == 16
        assert ga["pcie_rx_bytes_total"] >= si["weight"] * 2**30  # the weights came over PCIe
        used_gib = gb["mem_used_bytes"] / 2**30
        assert used_gib == pytest.approx(1.05 + si["weight"] + si["kvcache"] + si["graph"]["decode"], abs=0.02)
        assert gb["mem_used_bytes"] + gb["mem_reserved_bytes"] < gb["mem_total_bytes"]


def test_sim_gpus_during_startup_and_health_503():
    with SimProcess(BASE, speed=8.0) as s:
        seen, health = [], set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                seen.append(httpx.get(s.url + "/sim/gpus", timeout=2).json()["gpus"][0]["mem_used_bytes"])
                health.add(httpx.get(s.url + "/health", timeout=2).status_code)
            except httpx.HTTPError:
                pass
            if 200 in health:
                break
            time.sleep(0.1)
        ready = httpx.get(s.url + "/sim/gpus", timeout=2).json()["gpus"]
        weight_bytes = httpx.get(s.url + "/server_info", timeout=2).json()["internal_states"][0]["memory_usage"]["weight"] * 2**30
    assert 503 in health and 200 in health
    # the weights crossed PCIe exactly once during loading (plus the warmup's few allreduces)
    assert all(weight_bytes <= g["pcie_rx_bytes_total"] < 1.005 * weight_bytes for g in ready)
    assert seen == sorted(seen) and seen[0] < seen[-1]  # memory grows through the startup stages


@pytest.mark.slow
def test_api_key():
    with SimProcess(BASE + ["--api-key", "sekrit", "--enable-metrics"]) as s:
        s.wait_ready()
        body = {"text": "x", "sampling_params": {"max_new_tokens": 2}}
        r = httpx.post(s.url + "/generate", json=body, timeout=10)
        assert r.status_code == 401 and r.json() == {"error": "Unauthorized"}
        assert httpx.post(s.url + "/generate", json=body, headers={"Authorization": "bearer sekrit"}, timeout=10).status_code == 200
        assert httpx.get(s.url + "/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        for path in ("/health", "/health_generate", "/ready", "/metrics", "/sim/gpus"):
            assert httpx.get(s.url + path, timeout=10).status_code == 200, path


def test_metrics_absent_without_flag(spec_sim):
    assert httpx.get(spec_sim.url + "/metrics", timeout=10).status_code == 404


def test_speculative_meta_and_server_accept_length(spec_sim):
    url = spec_sim.url
    assert httpx.post(url + "/flush_cache", timeout=10).status_code == 200
    assert "avg_spec_accept_length" not in httpx.get(url + "/server_info", timeout=10).json()["internal_states"][0]
    chunks = stream(url, "/generate", {"text": "speculate", "stream": True, "sampling_params": {"max_new_tokens": 80, "ignore_eos": True}})
    data = chunks[:-1]
    meta = data[-1]["meta_info"]
    assert meta["completion_tokens"] == 80
    assert meta["spec_accept_length"] == pytest.approx(80 / meta["spec_verify_ct"])
    assert 2.4 < meta["spec_accept_length"] < 3.6
    assert meta["spec_num_proposed_drafts"] == 3 * meta["spec_verify_ct"]
    assert meta["spec_accept_rate"] == pytest.approx(meta["spec_num_correct_drafts"] / meta["spec_num_proposed_drafts"])
    assert max(c["meta_info"]["completion_tokens"] - p["meta_info"]["completion_tokens"] for p, c in zip(data, data[1:], strict=False)) > 1
    assert all("spec_verify_ct" not in c["meta_info"] for c in data[:-1])
    st = httpx.get(url + "/server_info", timeout=10).json()["internal_states"][0]
    assert 2.0 < st["avg_spec_accept_length"] < 4.0
    assert spec_sim.wait_for("accept len: ") and "accept rate: " in spec_sim.stderr
    httpx.post(url + "/flush_cache", timeout=10)
    assert "avg_spec_accept_length" not in httpx.get(url + "/server_info", timeout=10).json()["internal_states"][0]


def test_spec_tokens_details_sglext(spec_sim):
    body = {"prompt": "x", "max_tokens": 20, "ignore_eos": True, "stream": True, "return_spec_tokens_details": True,
            "stream_options": {"include_usage": True}}
    chunks = stream(spec_sim.url, "/v1/completions", body)
    ext, usage = chunks[-3], chunks[-2]
    assert ext["choices"] == [] and ext["sglext"]["spec_tokens_details"]["spec_verify_ct"] > 0
    assert usage["usage"]["completion_tokens"] == 20
    body["stream"] = False
    full = httpx.post(spec_sim.url + "/v1/completions", json=body, timeout=10).json()
    assert full["sglext"]["spec_tokens_details"]["spec_accept_length"] > 1


def test_startup_never_moves_more_than_the_link_can_carry_even_sped_up():
    """--sim-speed 50 compresses the start-up, not PCIe: the weight loading's rate stays at
    or under Gen5 x16 (63 GB/s), and the weights still cross once."""
    from tuiapp.sim.model import PCIE_LINK_BYTES_PER_S

    with SimProcess(BASE, speed=50.0) as s:
        samples = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                doc = httpx.get(s.url + "/sim/gpus", timeout=2).json()
                samples.append((doc["t_s"], doc["gpus"][0]["pcie_rx_bytes_total"]))
                if httpx.get(s.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    rates = [(b1 - b0) / (t1 - t0) for (t0, b0), (t1, b1) in zip(samples, samples[1:], strict=False) if t1 > t0]
    assert max(rates) > 10e9  # the loading was seen
    assert max(rates) <= 1.01 * PCIE_LINK_BYTES_PER_S

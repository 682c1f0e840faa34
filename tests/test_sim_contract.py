"""Contract tests: the simulator's requests/responses against documented shapes and, when the
sglang wheel is importable (docs/sglang-interface.md §10 stub trick; never a project
dependency), against SGLang's own schemas: sglang.api.v1.api_types (/generate, info
endpoints, the exact unknown-field error text) and the OpenAI protocol models.
"""

import importlib
import importlib.util
import sys
import types

import httpx
import orjson
import pytest

from tuiapp.sim.process import SimProcess

EAGLE = ["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--speculative-algorithm", "EAGLE3",
         "--speculative-draft-model-path", "lmsys/eagle3", "--sim-step-ms", "2", "--decode-log-interval", "5"]
BENCH_PAYLOAD = {"text": "Hello, how are you today?", "sampling_params": {"temperature": 0.0, "max_new_tokens": 24, "ignore_eos": True},
                 "stream": True, "lora_path": None, "return_logprob": False, "return_routed_experts": False, "logprob_start_len": -1}
META_ALWAYS = {"id", "finish_reason", "prompt_tokens", "weight_version", "num_retractions", "reasoning_tokens",
               "completion_tokens", "cached_tokens"}
META_SPEC_FINAL = {"spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct"}
MODEL_INFO_KEYS = {"model_path", "served_model_name", "tokenizer_path", "is_generation", "preferred_sampling_params",
                   "weight_version", "load_format", "reasoning_parser", "tool_call_parser", "disaggregation_mode",
                   "has_image_understanding", "has_audio_understanding", "model_type", "architectures"}


@pytest.fixture(scope="module")
def sim():
    with SimProcess(EAGLE) as s:
        s.wait_ready()
        yield s


def _sse(url, path, body) -> list[dict]:
    out = []
    with httpx.stream("POST", url + path, json=body, timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(orjson.loads(line[6:]))
    return out


def _sglang(module: str):
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed")
    if "sglang" not in sys.modules:  # skip sglang/__init__.py, which needs torch
        spec = importlib.util.find_spec("sglang")
        stub = types.ModuleType("sglang")
        stub.__path__ = list(spec.submodule_search_locations)
        stub.__spec__ = spec
        sys.modules["sglang"] = stub
    if "IPython.display" not in sys.modules and importlib.util.find_spec("IPython") is None:
        ipy, disp = types.ModuleType("IPython"), types.ModuleType("IPython.display")
        disp.HTML, disp.display = object, (lambda *a, **k: None)
        sys.modules["IPython"], sys.modules["IPython.display"] = ipy, disp
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module} not importable: {exc}")


# ---------------------------------------------------------------- documented shapes


def test_generate_stream_documented_shape(sim):
    chunks = _sse(sim.url, "/generate", BENCH_PAYLOAD)
    for c in chunks:
        assert set(c) == {"text", "output_ids", "meta_info"}
        assert META_ALWAYS <= set(c["meta_info"])
    assert {"e2e_latency"} | META_SPEC_FINAL <= set(chunks[-1]["meta_info"])
    assert not any(META_SPEC_FINAL & set(c["meta_info"]) for c in chunks[:-1])
    assert chunks[-1]["meta_info"]["completion_tokens"] == 24 == len(chunks[-1]["output_ids"])


def test_info_documented_shape(sim):
    assert MODEL_INFO_KEYS == set(httpx.get(sim.url + "/model_info", timeout=10).json())
    si = httpx.get(sim.url + "/server_info", timeout=10).json()
    for key in ("launch_command", "status", "max_total_num_tokens", "max_req_input_len", "kv_events", "startup_time",
                "internal_states", "version", "frontend", "speculative_num_steps", "speculative_eagle_topk",
                "speculative_num_draft_tokens", "mem_fraction_static", "cuda_graph_max_bs_decode", "tp_size"):
        assert key in si, key
    st = si["internal_states"][0]
    assert {"weight", "kvcache", "startup_available", "token_capacity", "graph"} <= set(st["memory_usage"])
    assert (si["speculative_num_steps"], si["speculative_eagle_topk"], si["speculative_num_draft_tokens"]) == (3, 1, 4)


# ---------------------------------------------------------------- SGLang's own schemas


def test_generate_against_api_types(sim):
    api = _sglang("sglang.api.v1.api_types")
    req = api.GenerateRequest.from_json_value(BENCH_PAYLOAD)
    assert req.stream is True
    chunks = _sse(sim.url, "/generate", BENCH_PAYLOAD)
    for c in chunks:
        api.GenerateResponse.from_json_value(c)
    final = api.GenerateResponse.from_json_value(chunks[-1])
    assert final.meta_info.completion_tokens == 24 and final.meta_info.e2e_latency > 0
    body = dict(BENCH_PAYLOAD, stream=False)
    api.GenerateResponse.from_json_value(httpx.post(sim.url + "/generate", json=body, timeout=30).json())


def test_unknown_sampling_key_error_text_matches_sglang(sim):
    api = _sglang("sglang.api.v1.api_types")
    with pytest.raises(api.JsonContractError) as exc:
        api.SamplingParams.from_json_value({"max_new_tokens": 4, "bogus": 1})
    r = httpx.post(sim.url + "/generate", json={"text": "x", "sampling_params": {"max_new_tokens": 4, "bogus": 1}}, timeout=10)
    assert r.status_code == 400 and r.json() == {"error": str(exc.value)}


def test_info_against_api_types(sim):
    api = _sglang("sglang.api.v1.api_types")
    mi = api.GetModelInfoResponse.from_json_value(httpx.get(sim.url + "/model_info", timeout=10).json())
    assert mi.is_generation and mi.model_path == "moonshotai/Kimi-K2.5"
    si = api.GetServerInfoResponse.from_json_value(httpx.get(sim.url + "/server_info", timeout=10).json())
    assert si.version == "0.5.23" and si.max_total_num_tokens > 0 and si.internal_states


def test_openai_against_protocol(sim):
    proto = _sglang("sglang.srt.entrypoints.openai.protocol")
    body = {"model": "m", "prompt": "Hi", "max_tokens": 10, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "return_spec_tokens_details": True}
    proto.CompletionRequest.model_validate(body)
    chunks = _sse(sim.url, "/v1/completions", body)
    for c in chunks:
        proto.CompletionStreamResponse.model_validate(c)
    assert proto.CompletionStreamResponse.model_validate(chunks[-2]).sglext.spec_tokens_details.spec_verify_ct > 0
    full = httpx.post(sim.url + "/v1/completions", json=dict(body, stream=False), timeout=30).json()
    proto.CompletionResponse.model_validate(full)
    chat = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    proto.ChatCompletionRequest.model_validate(chat)
    for c in _sse(sim.url, "/v1/chat/completions", chat):
        proto.ChatCompletionStreamResponse.model_validate(c)
    full = httpx.post(sim.url + "/v1/chat/completions", json=dict(chat, stream=False), timeout=30).json()
    parsed = proto.ChatCompletionResponse.model_validate(full)
    assert parsed.model_dump(mode="json")["choices"] == full["choices"]
    proto.ModelList.model_validate(httpx.get(sim.url + "/v1/models", timeout=10).json())

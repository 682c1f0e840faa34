"""The benchmark loop and its client against a small SGLang-format server with exact pacing."""

import asyncio

import pytest

from tuiapp.bench.client import stream_request
from tuiapp.bench.http_client import make_client
from tuiapp.bench.loop import BenchLoop
from tuiapp.bench.settings import BenchSettings, Timeouts
from tuiapp.events import Alert, BenchState, BenchSummary, Note, RequestDone, RunDone
from tuiapp.sim.testserver import FakeSGLang


@pytest.fixture
async def server(fake_sglang):
    return await fake_sglang(prefill_s=0.01, step_s=0.004, tokens_per_chunk=1)


def settings(**kw):
    base = dict(max_new_tokens=25, runs=2, warmup_requests=0, flush_cache=False)
    base.update(kw)
    return BenchSettings(**base)


async def run_loop(srv, **kw):
    events = []
    loop = BenchLoop(events.append, srv.url, settings(**kw))
    await asyncio.wait_for(loop.run(), 20)
    return loop, events


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("api", ["generate", "completions", "chat"])
async def test_spec_chunks_measured_per_token(server, api):
    server.tokens_per_chunk, server.spec = 3, True
    loop, events = await run_loop(server, api=api, max_new_tokens=31, runs=1)
    (req,) = of(events, RequestDone)
    assert req.ok and req.completion_tokens == 31
    # 1 prefill token, then 10 chunks of 3 tokens
    assert req.chunks == 11 and req.tokens_per_chunk == 3.0
    assert req.spec_verify_ct == 11 and req.accept_length == 31 / 11
    assert req.accept_rate == pytest.approx(2 / 3)
    # ITL is per token, chunk gap per chunk: 3 tokens every 4 ms
    assert req.tpot_s == pytest.approx((req.e2e_s - req.ttft_s) / 30)
    assert req.decode_tok_s == pytest.approx(30 / (req.e2e_s - req.ttft_s))
    # Pacing on a shared 2-core box: loose bounds here; benchmarks/bench_fidelity.py measures it.
    assert 0.5 * 750 < req.decode_tok_s < 1.5 * 750
    assert 0.5 * 0.004 < req.chunk_gap_mean_s < 2 * 0.004
    assert 0.01 <= req.ttft_s < 0.2
    (run,) = of(events, RunDone)
    assert run.accept_length == 31 / 11 and run.decode_tok_s == req.decode_tok_s
    if api != "generate":
        assert server.last_body["return_spec_tokens_details"] is True
        assert server.last_body["stream_options"] == {"include_usage": True}
        assert server.last_body["model"] == "fake-model"  # from /v1/models
    else:
        assert server.last_body["sampling_params"] == {"temperature": 0.0, "max_new_tokens": 31, "ignore_eos": True}


async def test_runs_and_summary(server):
    loop, events = await run_loop(server, runs=3, concurrency=2, requests_per_run=4)
    runs = of(events, RunDone)
    assert [r.run_index for r in runs] == [0, 1, 2]
    assert all(r.requests == 4 and r.errors == 0 and r.concurrency == 2 for r in runs)
    for r in runs:
        # aggregate = completion tokens / run wall time; 4 requests of 25 tokens
        assert r.output_tok_s == pytest.approx(100 / r.duration_s)
    summaries = of(events, BenchSummary)
    assert [s.runs for s in summaries] == [1, 2, 3]
    assert summaries[0].sd_decode_tok_s is None and summaries[-1].ci95_decode_tok_s is not None
    s = loop.summary()
    assert [x["decode_tok_s"] for x in s["runs"]] == [r.decode_tok_s for r in runs]
    assert s["mean_decode_tok_s"] == pytest.approx(sum(r.decode_tok_s for r in runs) / 3)
    low, high = s["ci95_decode_tok_s"]
    assert low < s["mean_decode_tok_s"] < high
    assert [e.state for e in of(events, BenchState)] == ["running", "done"]


async def test_closed_loop_sends_the_next_request_before_publishing_the_last(server, monkeypatch):
    """A finished request's event is built and published after the next request's bytes have
    left (a burst's sends are not spread by our bookkeeping); the run's event after them all."""
    from tuiapp.common.lean_transport import LeanTransport

    posts = []
    real_post = LeanTransport.post

    async def post(self, *args, **kwargs):
        posts.append(args[0].path)
        return await real_post(self, *args, **kwargs)

    monkeypatch.setattr(LeanTransport, "post", post)
    seen = []

    def publish(ev):
        if isinstance(ev, (RequestDone, RunDone)):
            seen.append((type(ev).__name__, len(posts)))

    loop = BenchLoop(publish, server.url, settings(runs=1, concurrency=1, requests_per_run=4, max_new_tokens=4))
    await asyncio.wait_for(loop.run(), 20)
    assert posts == ["/generate"] * 4  # every benchmark request took the lean path
    assert seen == [("RequestDone", 2), ("RequestDone", 3), ("RequestDone", 4), ("RequestDone", 4),
                    ("RunDone", 4)]


async def test_warmup_not_counted_and_cache_flushed(server):
    loop, events = await run_loop(server, runs=1, warmup_requests=2, flush_cache=True)
    assert server.requests == 3 and server.flushes == 1
    assert len(of(events, RequestDone)) == 1
    assert of(events, BenchState)[0].state == "warming_up"


@pytest.mark.parametrize(
    ("fault", "expect"),
    [
        ("http500", "HTTP 500: internal boom"),
        ("stream_error", "server error: boom in stream"),
        ("malformed", "malformed chunk"),
        ("abort", "aborted"),
        ("close", "connection closed by the server"),
        ("stall", "stream stalled"),
        ("no_first", "no first token"),
    ],
)
@pytest.mark.parametrize("api", ["generate", "chat"])
async def test_bad_responses_are_failed_requests(server, fault, expect, api):
    server.faults.extend([fault])
    t = Timeouts(first_token_s=0.4, stall_s=0.3)
    loop, events = await run_loop(server, api=api, runs=2, timeouts=t)
    reqs = of(events, RequestDone)
    assert len(reqs) == 2 and not reqs[0].ok and reqs[1].ok
    assert expect in reqs[0].error
    runs = of(events, RunDone)
    assert runs[0].errors == 1 and runs[0].decode_tok_s is None and runs[1].errors == 0


@pytest.mark.parametrize("api", ["generate", "completions"])
async def test_nan_finish_is_flagged(server, api):
    server.faults.extend(["nan", "nan"])
    loop, events = await run_loop(server, api=api, runs=3)
    reqs = of(events, RequestDone)
    assert [r.numerical_fault for r in reqs] == [True, True, False]
    alerts = of(events, Alert)
    assert len(alerts) == 2 and {a.alert_kind for a in alerts} == {"numerical"}
    assert {a.source for a in alerts} == {"bench"} and alerts[0].alert_id == alerts[1].alert_id
    assert "2 so far" in alerts[1].message


async def test_api_key_is_sent_as_bearer(server):
    server.api_key = "s3cret-key"
    events = []
    loop = BenchLoop(events.append, server.url, settings(runs=1, flush_cache=True), api_key="s3cret-key")
    await asyncio.wait_for(loop.run(), 10)
    assert of(events, RequestDone)[0].ok and server.flushes == 1
    events.clear()
    loop = BenchLoop(events.append, server.url, settings(runs=1), api_key="wrong")
    await asyncio.wait_for(loop.run(), 10)
    (req,) = of(events, RequestDone)
    assert not req.ok and req.error.startswith("HTTP 401")
    assert not any("s3cret" in e.model_dump_json() or "wrong" in e.model_dump_json() for e in events)


async def test_vanished_server_pauses_and_resumes():
    srv = FakeSGLang(prefill_s=0.005, step_s=0.002)
    port = await srv.start()
    events = []
    loop = BenchLoop(events.append, srv.url, settings(runs=4, max_new_tokens=10))
    task = asyncio.create_task(loop.run())
    while len(of(events, RunDone)) < 1:
        await asyncio.sleep(0.005)
    await srv.stop()
    while not any(e.state == "waiting_server" for e in of(events, BenchState)):
        await asyncio.sleep(0.01)
    assert not task.done()
    srv2 = FakeSGLang(prefill_s=0.005, step_s=0.002)
    await srv2.start(port=port)
    await asyncio.wait_for(task, 15)
    await srv2.stop()
    states = [e.state for e in of(events, BenchState)]
    assert "waiting_server" in states and states[-1] == "done"
    assert len(of(events, RunDone)) == 4
    # requests in flight when it vanished fail; no request was lost to "cannot connect"
    assert not any("cannot connect" in (r.error or "") for r in of(events, RequestDone))


async def test_pause_resume_restart_stop(server):
    events = []
    loop = BenchLoop(events.append, server.url, settings(runs=None, max_new_tokens=5))
    task = asyncio.create_task(loop.run())
    while len(of(events, RunDone)) < 2:
        await asyncio.sleep(0.005)
    loop.pause()
    await asyncio.sleep(0.05)
    n = len(of(events, RequestDone))
    await asyncio.sleep(0.1)
    assert len(of(events, RequestDone)) == n  # nothing new starts while paused
    loop.resume()
    loop.restart()
    while not loop.results:
        await asyncio.sleep(0.005)
    assert loop.results[0].run_index == 0  # numbering started again
    loop.stop()
    await asyncio.wait_for(task, 5)
    states = [e.state for e in of(events, BenchState)]
    assert "paused" in states and states[-1] == "stopped"
    assert not of(events, Note)


async def test_unreachable_client_request_reports_connect_failure():
    async with make_client(Timeouts(connect_s=1), api_key=None, concurrency=1) as client:
        res = await stream_request(client, "http://127.0.0.1:1/generate", "generate", b"{}", Timeouts())
    assert not res.ok and res.connect_failed and res.error.startswith("cannot connect")


async def test_non_cumulative_stream_and_jsonl_prompts(server, tmp_path):
    server.cumulative = False
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello there", "max_new_tokens": 7}\n\n"plain string"\n')
    loop, events = await run_loop(server, runs=2, workload=str(path))
    reqs = of(events, RequestDone)
    assert [r.completion_tokens for r in reqs] == [7, 25]
    assert all(r.ok for r in reqs)


GARBAGE = [
    b'data: {"text": "x", "meta_info": {"completion_tokens": 3, "finish_reason": 7, "spec_verify_ct": "x",'
    b' "spec_accept_length": "long", "prompt_tokens": -1}}\n\ndata: [DONE]\n\n',
    b'data: {"text": "x", "meta_info": {"completion_tokens": 2, "finish_reason": {"type": 5}}}\n\n',
    b'data: ["completion_tokens": 1]\n\ndata: [DONE]\n\n',
    b'data: [1, 2]\n\n',
    b'data: {"meta_info": "no", "completion_tokens": 4}\n\n',
    b'data: {"choices": "nope", "usage": {"completion_tokens": "many"}}\n\ndata: [DONE]\n\n',
    b'data: {"choices": [{"text": "a", "finish_reason": 3}], "usage": [1], "sglext": {"spec_tokens_details": 5}}\n\n',
    b'data: {"choices": [], "usage": {"completion_tokens": 9, "prompt_tokens": "p"}, "sglext": []}\n\ndata: [DONE]\n\n',
    b"",
    b"\xff\xfe garbage without newline",
    b"data: \n\ndata:\n\n: comment\n\nevent: x\n\n",
]


@pytest.mark.parametrize("api", ["generate", "completions"])
async def test_garbage_never_crashes_the_loop(server, api):
    server.faults.extend(GARBAGE)
    loop, events = await run_loop(server, api=api, runs=2, requests_per_run=len(GARBAGE))
    reqs = of(events, RequestDone)
    assert len(reqs) == 2 * len(GARBAGE)
    assert all(r.ok for r in reqs[len(GARBAGE):])  # good requests after all that
    reqs = reqs[: len(GARBAGE) + 1]
    for r in reqs[:-1]:
        assert r.ok is False or r.completion_tokens is not None
        assert r.ok or r.error
    assert of(events, BenchState)[-1].state == "done"


async def test_503_waits_for_the_server_instead_of_failing(server):
    server.faults.extend(["http503", "http503"])
    loop, events = await run_loop(server, runs=2)
    reqs = of(events, RequestDone)
    assert len(reqs) == 2 and all(r.ok for r in reqs)  # the 503s were retried, not counted
    assert server.requests == 4
    assert "waiting_server" in [e.state for e in of(events, BenchState)]


async def test_runs_that_fail_entirely_slow_down(server):
    server.faults.extend(["http400"] * 4)
    loop = None
    events = []
    loop = BenchLoop(events.append, server.url, settings(runs=5))
    t0 = asyncio.get_running_loop().time()
    await asyncio.wait_for(loop.run(), 20)
    elapsed = asyncio.get_running_loop().time() - t0
    runs = of(events, RunDone)
    assert [r.errors for r in runs] == [1, 1, 1, 1, 0]
    assert elapsed >= 0.1 + 0.2 + 0.4 + 0.8  # backed off after each failed run
    notes = [n.text for n in of(events, Note)]
    assert len(notes) == 1 and "every request of run 0 failed" in notes[0]
    assert of(events, RequestDone)[0].error == "HTTP 400: model not found"


@pytest.mark.slow
async def test_repeated_503s_back_off_instead_of_flapping(server):
    # /health says 200 while /generate keeps saying 503: each outage waits longer than the
    # last (0.5, 1, 2 s), rather than probing and retrying every 0.5 s.
    server.faults.extend(["http503"] * 3)
    t0 = asyncio.get_running_loop().time()
    loop, events = await run_loop(server, runs=1)
    assert asyncio.get_running_loop().time() - t0 >= 3.4
    assert all(r.ok for r in of(events, RequestDone))


async def test_openai_accept_length_from_verify_count_when_the_server_gives_no_length(server):
    # An older server's sglext carries spec_verify_ct but no accept_length; usage comes after.
    server.faults.append(
        b'data: {"choices": [{"index": 0, "text": "abc", "finish_reason": null}]}\n\n'
        b'data: {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}\n\n'
        b'data: {"choices": [], "sglext": {"spec_tokens_details": {"spec_verify_ct": 4}}}\n\n'
        b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 12}}\n\n'
        b'data: [DONE]\n\n'
    )
    loop, events = await run_loop(server, api="completions", runs=1)
    req = of(events, RequestDone)[0]
    assert req.ok and req.spec_verify_ct == 4 and req.accept_length == 3.0

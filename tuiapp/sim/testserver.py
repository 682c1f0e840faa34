"""A minimal SGLang-format streaming server with exact pacing, for tests and client-cost runs.

Not the simulator (tuiapp/sim is the full stand-in, with a scheduler): this fake only
paces chunks, on the simulator's lean HTTP layer (tuiapp/sim/http.py), so that on a small
box the server's own CPU cost stays far below the client's and its pacing is exact. Chunk i of a request is sent at
``t_recv + prefill_s + i * step_s`` (absolute schedule, no drift); the first chunk carries
one token (prefill), each later chunk ``tokens_per_chunk`` tokens (speculative decoding
with a constant accept length when > 1).

Faults for tests: push names onto ``FakeSGLang.faults``; each request takes the next one:
``http500``, ``http401``, ``http400``, ``http503``, ``stream_error`` (in-stream error chunk), ``malformed`` (bad JSON
chunk), ``stall`` (stops sending mid-stream), ``nan`` (finish "NaN happened"), ``abort``,
``no_first`` (never sends a token), ``close`` (drops the connection mid-stream); or bytes:
sent as the whole response body.

Other servers' ways, for the OpenAI endpoints (as transformers serve and llama.cpp do):
``openai_only`` (no SGLang endpoints: 404), ``refuse_fields`` (HTTP 422 naming the
unexpected field), ``no_done`` (no ``data: [DONE]``), ``usage_in_last_chunk`` (usage rides
on the finishing chunk), ``role_first`` (a role-only first chunk), ``no_usage``,
``one_at_a_time`` (HTTP 429 while another stream is running), ``interrupt`` (a new request
ends the running stream, as llama-cpp-python does).

Overload and failure, for the load tests (tests/test_overload.py): ``max_running`` streams
decode at once and ``max_queued`` more wait for a slot (FIFO); beyond that a request is
refused as ``queue_full`` says (``429``: HTTP 429 in SGLang's error shape; ``503``: the HTTP
503 SGLang 0.5.23 gives a non-streaming request; ``abort``: HTTP 200 and 0.5.23's in-stream
abort chunk). ``fail_every`` k: every k-th generation request answers HTTP 500;
``empty_output``: every stream finishes with no output token; ``die_after`` N: the N+1-th
generation request finds the server gone (it closes every connection and stops listening, as
a killed server). ``peak_running`` is the most streams that were decoding at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

from tuiapp.sim.http import Connection, Request, serve


@dataclass
class FakeSGLang:
    prefill_s: float = 0.02
    step_s: float = 0.01
    tokens_per_chunk: int = 1
    spec: bool = False  # report spec_* in meta_info / sglext (accept length = tokens_per_chunk)
    num_draft_tokens: int = 4
    api_key: str | None = None
    cumulative: bool = True  # SGLang default: /generate text and output_ids repeat everything
    model: str = "fake-model"
    metrics: bool = True
    old_paths_only: bool = False  # an older SGLang: only /get_server_info, /get_model_info
    faults: deque[str | bytes] = field(default_factory=deque)
    openai_only: bool = False
    refuse_fields: frozenset[str] = frozenset()
    no_done: bool = False
    usage_in_last_chunk: bool = False
    role_first: bool = False
    no_usage: bool = False
    one_at_a_time: bool = False
    interrupt: bool = False  # a new request ends the running stream ([DONE], no finish reason)
    models_fail: bool = False  # GET /v1/models answers 500 (transformers serve 5.17 without its hub cache)
    pinned: bool = False  # a request naming another model than ``model`` gets 400 (transformers serve MODEL)
    models_starting: int = 0  # the next N GET /v1/models answer 503 "Server is starting" (/health is up)
    max_running: int = 0  # 0: no cap
    max_queued: int = 0  # with max_running: how many may wait for a slot
    queue_full: str = "429"  # 429 | 503 | abort: how a request beyond the queue is refused
    fail_every: int = 0  # every k-th generation request answers HTTP 500
    empty_output: bool = False
    die_after: int = 0  # the server dies when generation request N+1 arrives
    peak_running: int = 0
    queue_refused: int = 0  # requests refused because the queue was full
    refused: int = 0  # requests answered 422 or 429
    streaming: int = 0
    requests: int = 0
    tokens_sent: int = 0  # every token streamed, finished or not (client-cost accounting)
    flushes: int = 0
    last_body: dict[str, Any] | None = None
    paths_seen: list[str] = field(default_factory=list)  # every request's path, in order
    _server: asyncio.AbstractServer | None = None
    port: int = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        self._server = await serve(self._handle, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Close live keep-alive connections too, as a killed server would.
            for conn in list(self._conns):
                conn.transport.close()
            await self._server.wait_closed()
            self._server = None

    def __post_init__(self) -> None:
        self._conns: set[Connection] = set()
        self._running: set[asyncio.Event] = set()
        self._generations = 0  # generation requests received
        self._decoding = 0
        self._waiting: deque[asyncio.Future] = deque()

    # ------------------------------------------------------------ HTTP

    async def _handle(self, req: Request, conn: Connection) -> None:
        if conn not in self._conns:
            self._conns.add(conn)
            conn.on_close.append(lambda: self._conns.discard(conn))
        path = req.path
        self.paths_seen.append(path)
        if self.openai_only and not path.startswith(("/v1/", "/health")):
            return conn.respond(404, b'{"detail": "Not Found"}')
        public = path.startswith(("/health", "/metrics"))
        if self.api_key and not public and req.headers.get("authorization") != f"Bearer {self.api_key}":
            return conn.respond(401, b'{"error": "Unauthorized"}')
        if path in ("/health", "/health_generate"):
            return conn.respond(200, b"")
        if path == "/flush_cache":
            self.flushes += 1
            return conn.respond(200, b"Cache flushed.\n", "text/plain")
        if path == "/metrics" and self.metrics:
            return conn.respond(200, self._metrics_text(), "text/plain; version=0.0.4")
        if path == "/v1/models" and self.models_starting > 0:
            self.models_starting -= 1
            return conn.respond(503, b'{"detail": "Server is starting"}')
        if path == "/v1/models" and self.models_fail:
            return conn.respond(500, b"Internal Server Error", "text/plain")
        if path == "/v1/models":
            return conn.respond(200, orjson.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}))
        info = {"/server_info": self._server_info, "/get_server_info": self._server_info, "/model_info": self._model_info, "/get_model_info": self._model_info}
        if path in info and not (self.old_paths_only and not path.startswith("/get_")):
            return conn.respond(200, orjson.dumps(info[path]()))
        if path in ("/generate", "/v1/completions", "/v1/chat/completions") and req.method in ("POST", "PUT"):
            body = orjson.loads(req.body)
            if self.pinned and path.startswith("/v1/") and body.get("model", self.model) != self.model:
                said = f"Server is pinned to '{self.model}'; requested '{body['model']}'."
                return conn.respond(400, orjson.dumps({"detail": said}))
            unexpected = sorted(set(body) & self.refuse_fields)
            if unexpected:
                self.refused += 1
                text = "Unexpected fields in the request: {" + ", ".join(repr(k) for k in unexpected) + "}"
                return conn.respond(422, orjson.dumps({"detail": text}))
            if self.one_at_a_time and self.streaming:
                self.refused += 1
                return conn.respond(429, b'{"error": {"message": "server busy"}}')
            self._generations += 1
            if self.die_after and self._generations > self.die_after:
                conn.transport.abort()
                if self._server is not None:
                    asyncio.ensure_future(self.stop())
                return None
            if self.fail_every and self._generations % self.fail_every == 0:
                return conn.respond(500, b'{"object": "error", "message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}')
            if self.max_running and not await self._slot(conn, path, body):
                return None
            if self.interrupt:
                for cut in self._running:
                    cut.set()
            cut = asyncio.Event()
            self._running.add(cut)
            self.streaming += 1
            try:
                return await self._stream(path, body, conn, cut)
            finally:
                self.streaming -= 1
                self._running.discard(cut)
                if self.max_running:
                    self._free_slot()
        return conn.respond(404, b'{"detail": "Not Found"}')

    async def _slot(self, conn: Connection, path: str, body: dict[str, Any]) -> bool:
        """Take a decode slot, waiting in the queue for one; False when refused or gone."""
        if self._decoding < self.max_running and not self._waiting:
            self._take_slot()
            return True
        if len(self._waiting) >= self.max_queued:
            self.queue_refused += 1
            self._refuse_queue_full(conn, path, body)
            return False
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn in self._waiting:
                self._waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                self._free_slot()  # handed a slot just as it went away
            raise
        if conn.closed:
            self._free_slot()
            return False
        return True

    def _take_slot(self) -> None:
        self._decoding += 1
        self.peak_running = max(self.peak_running, self._decoding)

    def _free_slot(self) -> None:
        self._decoding -= 1
        while self._waiting and self._decoding < self.max_running:
            turn = self._waiting.popleft()
            if not turn.done():
                self._take_slot()
                turn.set_result(None)

    def _refuse_queue_full(self, conn: Connection, path: str, body: dict[str, Any]) -> None:
        message = "The request queue is full."  # SGLang's scheduler, --max-queued-requests
        if self.queue_full == "abort" and body.get("stream", True):
            conn.start_stream()
            if path == "/generate":
                meta = {"id": "r", "finish_reason": {"type": "abort", "status_code": 503, "message": message},
                        "weight_version": "default", "e2e_latency": 0.0005, "completion_tokens": 0}
                chunk = {"text": "", "output_ids": [], "meta_info": meta}
            else:
                chunk = {"error": {"object": "error", "message": message, "type": "SERVICE_UNAVAILABLE", "param": None,
                                   "code": 503}}
            conn.send(b"data: " + orjson.dumps(chunk) + b"\n\ndata: [DONE]\n\n")
            conn.end_stream()
            return
        status = 429 if self.queue_full == "429" else 503
        kind = "TOO_MANY_REQUESTS" if status == 429 else "503"
        conn.respond(status, orjson.dumps({"object": "error", "message": message, "type": kind, "param": None,
                                           "code": status}))

    def _server_info(self) -> dict[str, Any]:
        args = {
            "model_path": "/models/fake", "tp_size": 8, "ep_size": 1, "api_key": self.api_key,
            "speculative_algorithm": "EAGLE3" if self.spec else None,
            "speculative_num_steps": 3 if self.spec else None,
            "speculative_eagle_topk": 1 if self.spec else None,
            "speculative_num_draft_tokens": self.num_draft_tokens if self.spec else None,
        }
        state = {"last_gen_throughput": self.tokens_per_chunk / self.step_s}
        if self.spec:
            state["avg_spec_accept_length"] = float(self.tokens_per_chunk)
        return {**args, "internal_states": [state], "version": "0.5.23-fake"}

    def _model_info(self) -> dict[str, Any]:
        return {"model_path": "/models/fake", "served_model_name": self.model, "is_generation": True}

    def _metrics_text(self) -> bytes:
        lbl = f'model_name="{self.model}",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
        lines = [
            "# HELP sglang:gen_throughput The generation throughput (token/s).",
            "# TYPE sglang:gen_throughput gauge",
            f"sglang:gen_throughput{{{lbl}}} {self.tokens_per_chunk / self.step_s}",
            "# TYPE sglang:num_running_reqs gauge",
            f"sglang:num_running_reqs{{{lbl}}} 1.0",
            "# TYPE sglang:num_queue_reqs gauge",
            f"sglang:num_queue_reqs{{{lbl}}} 0.0",
            "# TYPE sglang:token_usage gauge",
            f"sglang:token_usage{{{lbl}}} 0.25",
            "# TYPE sglang:num_retracted_reqs gauge",
            f"sglang:num_retracted_reqs{{{lbl}}} 0.0",
            "# TYPE sglang:generation_tokens_total counter",
            f'sglang:generation_tokens_total{{model_name="{self.model}"}} {float(self.tokens_sent)}',
        ]
        if self.spec:
            rate = (self.tokens_per_chunk - 1) / (self.num_draft_tokens - 1)
            lines += [
                "# TYPE sglang:spec_accept_length gauge",
                f"sglang:spec_accept_length{{{lbl}}} {float(self.tokens_per_chunk)}",
                "# TYPE sglang:spec_accept_rate gauge",
                f"sglang:spec_accept_rate{{{lbl}}} {rate}",
            ]
        return ("\n".join(lines) + "\n").encode()

    # ------------------------------------------------------------ streaming

    async def _stream(self, path: str, req: dict[str, Any], conn: Connection,
                      cut: asyncio.Event | None = None) -> None:
        self.requests += 1
        self.last_body = req
        fault = self.faults.popleft() if self.faults else None
        if fault == "http500":
            return conn.respond(500, b'{"error": {"message": "internal boom"}}')
        if fault == "http401":
            return conn.respond(401, b'{"error": "Unauthorized"}')
        if fault == "http400":
            return conn.respond(400, b'{"error": {"message": "model not found"}}')
        if fault == "http503":
            return conn.respond(503, b'{"error": "starting"}')
        t_recv = time.perf_counter()
        native = path == "/generate"
        if native:
            n = int(req["sampling_params"]["max_new_tokens"])
        else:
            n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        conn.start_stream()
        if isinstance(fault, bytes):  # a test's own stream body, sent as is
            conn.send(fault)
            conn.end_stream()
            return
        if self.empty_output:  # finishes at once with no output token (an EOS first, a broken template)
            await asyncio.sleep(self.prefill_s)
            if path == "/generate":
                meta = {"id": "r", "finish_reason": {"type": "stop", "matched": 2}, "prompt_tokens": 30,
                        "completion_tokens": 0, "cached_tokens": 0, "e2e_latency": self.prefill_s}
                conn.send(b"data: " + orjson.dumps({"text": "", "output_ids": [], "meta_info": meta}) + b"\n\n")
            else:
                chat = path.endswith("chat/completions")
                choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                choice.update({"delta": {"role": "assistant", "content": ""}} if chat else {"text": ""})
                usage = {"prompt_tokens": 30, "completion_tokens": 0, "total_tokens": 30}
                conn.send(b"data: " + orjson.dumps({"id": "c", "model": self.model, "choices": [choice]}) + b"\n\n")
                conn.send(b"data: " + orjson.dumps({"id": "c", "choices": [], "usage": usage}) + b"\n\n")
            conn.send(b"data: [DONE]\n\n")
            conn.end_stream()
            return
        sizes = [1]
        while sum(sizes) < n:
            sizes.append(min(self.tokens_per_chunk, n - sum(sizes)))
        k = self.tokens_per_chunk
        verify_ct = len(sizes)  # prefill token + one verify step per later chunk, as SGLang counts
        fail_at = len(sizes) // 2
        text = []
        emitted = 0
        for i, size in enumerate(sizes):
            if conn.closed:
                return  # the client went away
            if cut is not None and cut.is_set():  # llama-cpp-python: the next request ends this one
                conn.send(b"data: [DONE]\n\n")
                conn.end_stream()
                return
            delay = t_recv + self.prefill_s + i * self.step_s - time.perf_counter()
            if fault == "no_first" and i == 0:
                await asyncio.sleep(3600)
            if delay > 0:
                await asyncio.sleep(delay)
            if i == fail_at and fault in ("stall", "close", "stream_error", "malformed"):
                if fault == "stall":
                    await asyncio.sleep(3600)
                if fault == "close":
                    conn.transport.abort()
                    return
                payload = b"{not json" if fault == "malformed" else orjson.dumps(
                    {"error": {"message": "boom in stream", "type": "invalid_request_error", "code": 400}}
                )
                conn.send(b"data: " + payload + b"\n\n")
                conn.send(b"data: [DONE]\n\n")
                conn.end_stream()
                return
            emitted += size
            self.tokens_sent += size
            piece = " tok" * size
            text.append(piece)
            last = i == len(sizes) - 1
            if native:
                finish = None
                if last:
                    finish = {"type": "length", "length": n}
                    if fault == "nan":
                        finish = {"type": "stop", "matched": "NaN happened"}
                    elif fault == "abort":
                        finish = {"type": "abort", "message": "aborted by test"}
                meta: dict[str, Any] = {"id": "r", "finish_reason": finish, "prompt_tokens": 30, "completion_tokens": emitted, "cached_tokens": 0}
                if last:
                    meta["e2e_latency"] = time.perf_counter() - t_recv
                    if self.spec:
                        meta.update(spec_verify_ct=verify_ct, spec_accept_length=n / verify_ct, spec_accept_rate=(k - 1) / (self.num_draft_tokens - 1))
                body = {"text": "".join(text) if self.cumulative else piece, "output_ids": list(range(emitted)) if self.cumulative else [0] * size, "meta_info": meta}
                conn.send(b"data: " + orjson.dumps(body) + b"\n\n")
            else:
                chat = path.endswith("chat/completions")
                if chat and i == 0 and self.role_first:
                    role = {"id": "c", "object": "chat.completion.chunk", "model": self.model,
                            "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
                    conn.send(b"data: " + orjson.dumps(role) + b"\n\n")
                choice: dict[str, Any] = {"index": 0, "finish_reason": None}
                if chat:
                    choice["delta"] = {"content": piece} if i else {"role": "assistant", "content": piece}
                else:
                    choice["text"] = piece
                if last:
                    choice["finish_reason"] = "stop" if fault == "nan" else ("abort" if fault == "abort" else "length")
                    if fault == "nan":
                        choice["matched_stop"] = "NaN happened"
                obj = {"id": "c", "object": "chat.completion.chunk" if chat else "text_completion", "model": self.model, "choices": [choice]}
                wants_usage = (req.get("stream_options") or {}).get("include_usage") and not self.no_usage
                if last and wants_usage and self.usage_in_last_chunk:
                    obj["usage"] = {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": 30 + n}
                    wants_usage = False
                conn.send(b"data: " + orjson.dumps(obj) + b"\n\n")
                if last:
                    if self.spec and req.get("return_spec_tokens_details"):
                        details = {"spec_accept_length": n / verify_ct, "spec_accept_rate": (k - 1) / (self.num_draft_tokens - 1), "spec_verify_ct": verify_ct}
                        conn.send(b"data: " + orjson.dumps({"id": "c", "choices": [], "sglext": {"spec_tokens_details": details}}) + b"\n\n")
                    if wants_usage:
                        usage = {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": 30 + n}
                        conn.send(b"data: " + orjson.dumps({"id": "c", "choices": [], "usage": usage}) + b"\n\n")
        if not self.no_done:
            conn.send(b"data: [DONE]\n\n")
        conn.end_stream()


def main(argv: list[str] | None = None) -> None:
    """``python -m tuiapp.sim.testserver --port P --step-ms 10 --tokens-per-chunk 3``"""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--prefill-ms", type=float, default=20.0)
    p.add_argument("--step-ms", type=float, default=10.0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--spec", action="store_true")
    p.add_argument("--api-key")
    quirks = p.add_argument_group("another server's ways (OpenAI endpoints)")
    for flag in ("openai-only", "no-done", "usage-in-last-chunk", "role-first", "no-usage", "one-at-a-time",
                 "interrupt", "models-fail", "pinned"):
        quirks.add_argument(f"--{flag}", action="store_true")
    quirks.add_argument("--refuse-field", action="append", default=[], metavar="NAME", help="HTTP 422 when sent")
    load = p.add_argument_group("overload and failure")
    load.add_argument("--max-running", type=int, default=0, help="streams decoding at once (0: no cap)")
    load.add_argument("--max-queued", type=int, default=0, help="requests that may wait for a slot")
    load.add_argument("--queue-full", choices=("429", "503", "abort"), default="429")
    load.add_argument("--fail-every", type=int, default=0, metavar="K", help="every K-th request answers 500")
    load.add_argument("--empty-output", action="store_true")
    load.add_argument("--die-after", type=int, default=0, metavar="N", help="stop listening at request N+1")
    a = p.parse_args(argv)
    srv = FakeSGLang(
        prefill_s=a.prefill_ms / 1000, step_s=a.step_ms / 1000, tokens_per_chunk=a.tokens_per_chunk,
        spec=a.spec, api_key=a.api_key, openai_only=a.openai_only, no_done=a.no_done,
        usage_in_last_chunk=a.usage_in_last_chunk, role_first=a.role_first, no_usage=a.no_usage,
        one_at_a_time=a.one_at_a_time, interrupt=a.interrupt, refuse_fields=frozenset(a.refuse_field),
        models_fail=a.models_fail, pinned=a.pinned, max_running=a.max_running, max_queued=a.max_queued,
        queue_full=a.queue_full, fail_every=a.fail_every, empty_output=a.empty_output, die_after=a.die_after,
    )

    async def serve() -> None:
        await srv.start(port=a.port)
        print(f"listening on {srv.url}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

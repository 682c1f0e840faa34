"""SGLang's HTTP API as the simulator serves it (shapes from docs/sglang-interface.md §1-6).

Routes: /generate, /v1/completions, /v1/chat/completions, /v1/models, /health,
/health_generate, /ready, /model_info, /get_model_info, /server_info, /get_server_info,
/flush_cache, /metrics (with --enable-metrics), /v1/loads and /get_load (tuiapp.sim.loads) and
the simulator's own /sim/gpus.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid

import orjson

from tuiapp.sim import textgen
from tuiapp.sim.http import Connection, Request, phrase
from tuiapp.sim.loads import LoadsBoard
from tuiapp.sim.metrics import render_metrics
from tuiapp.sim.request import SimRequest

SAMPLING_KEYS = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
    "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias",
    "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
)
AUTH_EXEMPT = ("/health", "/ready", "/metrics", "/sim/")
SSE_DONE = b"data: [DONE]\n\n"
QUEUE_FULL = "The request queue is full."  # scheduler.py _abort_on_queued_limit (0.5.23)
# a non-streaming request's answer: the HTTPException(503) of _handle_abort_finish_reason, shaped
# by http_server's exception handler
QUEUE_FULL_503 = {"object": "error", "message": QUEUE_FULL, "type": "503", "param": None, "code": 503}


class BadRequest(Exception):
    pass


def context_error(prompt_tokens: int, max_new: int | None, context_len: int) -> str | None:
    """SGLang's TokenizerManager length checks (0.5.23 wording), before anything is queued."""
    if prompt_tokens >= context_len:
        return f"The input ({prompt_tokens} tokens) is longer than the model's context length ({context_len} tokens)."
    if max_new is not None and prompt_tokens + max_new > context_len:
        return (f"Requested token count exceeds the model's maximum context length of {context_len} tokens. "
                f"You requested a total of {prompt_tokens + max_new} tokens: {prompt_tokens} tokens from the input "
                f"messages and {max_new} tokens for the completion. Please reduce the number of tokens in the input "
                "messages or the completion to fit within the limit.")
    return None


def _sse(obj) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _oai_finish(fr: dict | None) -> tuple[str | None, object]:
    if fr is None:
        return None, None
    if fr["type"] == "length":
        return "length", None
    if fr["type"] == "abort":
        return "abort", None
    return "stop", fr.get("matched")


class Api:
    def __init__(self, sim):
        self.sim = sim  # tuiapp.sim.server.SimServer
        self.salt = 0
        self.loads = LoadsBoard(sim)

    # ------------------------------------------------------------ dispatch
    async def handle(self, req: Request, conn: Connection) -> None:
        sim = self.sim
        path = req.path
        if path == "/sim/gpus":
            conn.respond(200, orjson.dumps(sim.farm.snapshot()))
            return
        if not sim.http_up:
            self.reply(conn, req, 503, {"detail": "Server is starting"})
            return
        if not self._authorized(req):
            self.reply(conn, req, 401, {"error": "Unauthorized"})
            return
        route = ROUTES.get(path)
        if route is None or (path == "/metrics" and not sim.ns.enable_metrics):
            self.reply(conn, req, 404, {"detail": "Not Found"})
            return
        methods, name = route
        if req.method not in methods:
            self.reply(conn, req, 405, {"detail": "Method Not Allowed"})
            return
        try:
            await getattr(self, name)(req, conn)
        except BadRequest as exc:
            self.reply(conn, req, 400, {"error": {"message": str(exc)}})

    def _authorized(self, req: Request) -> bool:
        ns = self.sim.ns
        key = ns.api_key
        if req.path == "/flush_cache" and ns.admin_api_key:
            key = ns.admin_api_key
        if not key or req.path.startswith(AUTH_EXEMPT):
            return True
        scheme, _, token = req.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(token.strip().encode(), key.encode())

    def reply(self, conn: Connection, req: Request, status: int, body, ctype: str | None = "application/json") -> None:
        data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else orjson.dumps(body))
        self.sim.log.access(req.client, req.method, req.target, status, phrase(status))
        conn.respond(status, data, ctype)

    def _json(self, req: Request) -> dict:
        try:
            body = orjson.loads(req.body or b"{}")
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"Invalid JSON body: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("JSON object expected")
        return body

    # ------------------------------------------------------------ health / info
    async def health(self, req, conn):
        sim = self.sim
        if not sim.ready:
            self.reply(conn, req, 503, b"", None)
            return
        if sim.scheduler.hung:
            timeout_s = sim.health_timeout_s / sim.speed
            await asyncio.sleep(timeout_s)
            sim.log.emit(
                f"Health check failed. Server couldn't get a response from detokenizer for last "
                f"{int(sim.health_timeout_s)} seconds. tic start time: {time.time() - timeout_s:.3f}. "
                f"last_heartbeat time: {sim.last_heartbeat_t:.3f}")
            self.reply(conn, req, 503, b"", None)
            return
        sim.last_heartbeat_t = time.time()
        self.reply(conn, req, 200, b"", None)  # real 0.5.23: no content-type, empty body

    async def ready(self, req, conn):
        ok = self.sim.ready and not self.sim.scheduler.hung
        self.reply(conn, req, 200 if ok else 503, b"", "text/plain")

    async def model_info(self, req, conn):
        sim = self.sim
        if req.path == "/get_model_info":
            sim.log.emit("Endpoint '/get_model_info' is deprecated and will be removed in a future version. Please use '/model_info' instead.")
        self.reply(conn, req, 200, sim.model_info())

    async def server_info(self, req, conn):
        sim = self.sim
        if req.path == "/get_server_info":
            sim.log.emit("Endpoint '/get_server_info' is deprecated and will be removed in a future version. Please use '/server_info' instead.")
        await self._scheduler_rpc()
        self.reply(conn, req, 200, sim.server_info())

    async def _scheduler_rpc(self) -> None:
        """An endpoint that asks the schedulers: a wedged one never answers."""
        s = self.sim.scheduler
        if s.hung or s.hung_dp:
            await asyncio.Future()

    async def flush_cache(self, req, conn):
        ok = self.sim.scheduler.flush()
        self.reply(
            conn, req, 200 if ok else 400,
            "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
            "waiting requests, the operation will not be performed.)\n", None)  # real: no content-type

    async def metrics(self, req, conn):
        text = render_metrics(self.sim)
        if self.sim.ns.sim_metric_names == "underscore":  # a router's /engine_metrics, Prometheus escaping
            text = text.replace("sglang:", "sglang_")
        self.reply(conn, req, 200, text, "text/plain; version=0.0.4; charset=utf-8")

    async def v1_loads(self, req, conn):
        if self.sim.ns.sim_old_loads:  # SGLang before #23010
            self.reply(conn, req, 404, {"detail": "Not Found"})
            return
        # shared memory, no scheduler call: answers while a rank is wedged (its slot frozen)
        status, body = self.loads.v1_loads(req.query.get("include"), req.query.get("dp_rank"))
        self.reply(conn, req, status, body)

    async def get_load(self, req, conn):
        await self._scheduler_rpc()
        self.reply(conn, req, 200, self.loads.get_load())

    async def models(self, req, conn):
        sim = self.sim
        self.reply(conn, req, 200, {"object": "list", "data": [{
            "id": sim.served_model_name, "object": "model", "created": int(sim.start_wall_s),
            "owned_by": "sglang", "root": sim.ns.model_path, "parent": None,
            "max_model_len": sim.context_len}]})

    # ------------------------------------------------------------ --max-queued-requests
    def _queue_full(self, n: int = 1) -> bool:
        """SGLang's _abort_on_queued_limit: n more requests do not fit the scheduler's waiting
        queue (retracted ones count; the running batch does not)."""
        limit = self.sim.ns.max_queued_requests
        if limit is None:
            return False
        waiting = sum(1 for r in self.sim.scheduler.waiting if not r.aborted)
        return waiting + n > limit

    def _refuse_queue_full(self, req: Request, conn: Connection, stream: bool, kind: str, body: dict) -> None:
        """The answer --sim-queue-full-status picks. 0.5.23 ("abort"): the scheduler aborts the
        request with status 503; a stream has already answered 200, so the abort arrives as its
        one chunk (/generate: meta_info.finish_reason; OpenAI: an error chunk, then the usage
        chunk when asked), then [DONE]; without a stream, HTTP 503. Not in
        sglang:num_aborted_requests_total (0.5.23 counts only aborts a client asked for)."""
        mode = self.sim.ns.sim_queue_full_status
        if mode == "429":  # sgl-router's concurrency limiter: StatusCode::TOO_MANY_REQUESTS, no body
            self.reply(conn, req, 429, b"", None)
            return
        if mode == "503" or not stream:
            self.reply(conn, req, 503, QUEUE_FULL_503)
            return
        self.sim.log.access(req.client, req.method, req.target, 200, "OK")
        conn.start_stream()
        rid = uuid.uuid4().hex
        wv = self.sim.ns.weight_version
        if kind == "generate":  # tokenizer_manager._handle_abort_req's out dict
            meta = {"id": rid, "finish_reason": {"type": "abort", "status_code": 503, "message": QUEUE_FULL},
                    "weight_version": wv, "e2e_latency": 0.0005, "weight_versions": [{"version": wv, "start": 0, "end": 0}],
                    "completion_tokens": 0, "response_sent_to_client_ts": time.time()}
            conn.send(_sse({"text": "", "output_ids": [], "meta_info": meta}))
        else:  # serving_chat / serving_completions: create_streaming_error_response(message, code.name, code)
            error = {"error": {"object": "error", "message": QUEUE_FULL, "type": "SERVICE_UNAVAILABLE", "param": None,
                               "code": 503}}
            conn.send(b"data: " + json.dumps(error).encode() + b"\n\n")  # json.dumps' spacing, as the real one
            opts = body.get("stream_options") or {}
            if opts.get("include_usage") or self.sim.ns.stream_response_default_include_usage:
                usage = {"prompt_tokens": 0, "total_tokens": 0, "completion_tokens": 0}
                if kind == "chat":
                    usage.update(prompt_tokens_details=None, reasoning_tokens=0, completion_tokens_details=None)
                else:
                    usage["reasoning_tokens"] = 0
                chunk = {"id": rid, "object": "chat.completion.chunk" if kind == "chat" else "text_completion",
                         "created": int(time.time()), "model": body.get("model") or self.sim.served_model_name,
                         "choices": [], "usage": usage}
                conn.send(_sse(chunk))
        conn.send(SSE_DONE)
        conn.end_stream()

    # ------------------------------------------------------------ request plumbing
    def _new_request(self, prompt_ids, max_new, ignore_eos, stops, temperature, sink, streaming, rid=None):
        salt = 0
        if temperature and temperature > 0:
            self.salt += 1
            salt = self.salt
        rid = rid or uuid.uuid4().hex
        return SimRequest(rid, prompt_ids, max_new, ignore_eos, stops or [], salt, sink, streaming)

    def _meta(self, r: SimRequest, first: bool) -> dict:
        # Keys and their order as real 0.5.23 sends them (tests/test_real_conformance.py).
        wall_minus_mono = time.time() - time.monotonic()
        final = r.finish_reason is not None
        m = {
            "id": r.rid, "finish_reason": r.finish_reason, "prompt_tokens": r.prompt_tokens,
            "weight_version": self.sim.ns.weight_version, "num_retractions": r.retractions,
            "storage_prefetch_wait": 0.0, "storage_staging_wait": 0.0,
            "forward_entry_time": r.t_arrive + wall_minus_mono,
            "prefill_finished_time": (r.t_first or r.t_arrive) + wall_minus_mono,
            "queue_time": r.queue_s, "reasoning_tokens": 0, "completion_tokens": r.completion_tokens,
            "cached_tokens": r.cached_tokens,
        }
        if final:
            m["weight_versions"] = [{"version": self.sim.ns.weight_version, "start": 0, "end": r.completion_tokens}]
        # a radix-cache hit is itemised by tier, no hit is null
        m["cached_tokens_details"] = {"device": r.cached_tokens, "host": 0} if r.cached_tokens else None
        m["dp_rank"] = None
        if first and not final:
            m["response_sent_to_client_ts"] = time.time()
        if final:
            m["e2e_latency"] = r.t_done - r.t_arrive
            m.update(self._spec_meta(r))
            if self.sim.ns.enable_metrics:  # req_time_stats keys, final chunk only
                m.update(request_received_ts=r.t_arrive + wall_minus_mono, first_token_latency=r.t_first - r.t_arrive,
                         api_server_dispatch_finish_ts=r.t_arrive + wall_minus_mono)
            m["response_sent_to_client_ts"] = (r.t_first or r.t_done) + wall_minus_mono
            if self.sim.ns.enable_metrics:
                decode_s = r.t_done - r.t_first
                m.update(request_finished_ts=r.t_done + wall_minus_mono,
                         decode_throughput=(r.completion_tokens - 1) / decode_s if decode_s > 0 else 0.0)
        return m

    def _spec_meta(self, r: SimRequest) -> dict:
        if not self.sim.plan.spec or r.spec_verify_ct <= 0:
            return {}
        return {
            "spec_accept_rate": r.correct_drafts / r.proposed_drafts if r.proposed_drafts else 0.0,
            "spec_accept_length": r.completion_tokens / r.spec_verify_ct,
            "spec_num_correct_drafts": r.correct_drafts,
            "spec_num_proposed_drafts": r.proposed_drafts,
            "spec_verify_ct": r.spec_verify_ct,
            "spec_accept_histogram": list(r.accept_hist),
            **({"spec_cap_lens_histogram": list(r.cap_hist)} if self.sim.plan.spec_adaptive else {}),
        }

    def _spec_details(self, r: SimRequest) -> dict:
        d = self._spec_meta(r)
        if not d:
            return {}
        steps = self.sim.plan.spec_num_steps
        return {
            "spec_accept_rate": d["spec_accept_rate"], "spec_accept_length": d["spec_accept_length"],
            "spec_cap_length": float(steps + 1), "spec_block_accept_length": d["spec_accept_length"],
            "spec_num_correct_drafts": d["spec_num_correct_drafts"],
            "spec_num_proposed_drafts": d["spec_num_proposed_drafts"], "spec_verify_ct": d["spec_verify_ct"],
            "spec_correct_drafts_histogram": d["spec_accept_histogram"],
            "spec_cap_lens_histogram": d.get("spec_cap_lens_histogram", []),
        }

    def _watch(self, conn: Connection, reqs: list[SimRequest], done: asyncio.Future) -> None:
        def lost():
            for r in reqs:
                self.sim.scheduler.abort(r)
            if not done.done():
                done.set_result(None)
        conn.on_close.append(lost)

    async def _run(self, reqs, done: asyncio.Future) -> None:
        for r in reqs:
            self.sim.scheduler.submit(r)
        await done

    # ------------------------------------------------------------ /generate
    async def generate(self, req, conn):
        body = self._json(req)
        sp_list = body.get("sampling_params") or {}
        texts = body.get("text")
        ids = body.get("input_ids")
        if texts is None and ids is None:
            raise BadRequest("Either text, input_ids or input_embeds should be provided.")
        if ids is not None:
            prompts = ids if ids and isinstance(ids[0], list) else [ids]
        else:
            prompts = [textgen.token_ids(t) for t in (texts if isinstance(texts, list) else [texts])]
        batch = isinstance(texts, list) or (ids is not None and bool(ids) and isinstance(ids[0], list))
        sps = sp_list if isinstance(sp_list, list) else [sp_list] * len(prompts)
        if not prompts or len(sps) != len(prompts):
            # the reply waits for every prompt to finish: a prompt without a request never would
            raise BadRequest(f"{len(prompts)} prompts with {len(sps)} sampling_params")
        for sp in sps:
            if not isinstance(sp, dict):
                raise BadRequest("sampling_params must be an object")
            for k in sp:
                if k not in SAMPLING_KEYS:
                    self.reply(conn, req, 400, {"error": f"unknown field `{k}`, expected one of " + ", ".join(f"`{x}`" for x in SAMPLING_KEYS)})
                    return
        for p, sp in zip(prompts, sps, strict=False):
            if (err := context_error(len(p), sp.get("max_new_tokens", 128), self.sim.context_len)) is not None:
                self.sim.log.emit(f"[http_server] Error: {err}")
                self.reply(conn, req, 400, {"error": {"message": err}})
                return
        stream = bool(body.get("stream", False))
        if self._queue_full(len(prompts)):
            self._refuse_queue_full(req, conn, stream, "generate", body)
            return
        incremental = self.sim.ns.incremental_streaming_output
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        left = [len(prompts)]
        results: list[dict | None] = [None] * len(prompts)
        rid0 = body.get("rid")

        def make_sink(index: int):
            sent = [0, 0, True]  # text chars, ids, first chunk

            def sink(r: SimRequest):
                if stream:
                    if incremental:
                        text, out_ids = r.text[sent[0]:], r.output_ids[sent[1]:]
                        sent[0], sent[1] = len(r.text), len(r.output_ids)
                    else:
                        text, out_ids = r.text, r.output_ids
                    chunk = {"text": text, "output_ids": out_ids, "meta_info": self._meta(r, sent[2])}
                    if batch:
                        chunk["index"] = index
                    sent[2] = False
                    conn.send(_sse(chunk))
                if r.finish_reason is not None:
                    if not stream:
                        results[index] = {"text": r.text, "output_ids": list(r.output_ids), "meta_info": self._meta(r, True)}
                    left[0] -= 1
                    if left[0] == 0 and not done.done():
                        done.set_result(None)
            return sink

        reqs = []
        for i, (p, sp) in enumerate(zip(prompts, sps, strict=False)):
            rid = rid0[i] if isinstance(rid0, list) else (rid0 if rid0 and len(prompts) == 1 else None)
            reqs.append(self._new_request(
                list(p), int(sp.get("max_new_tokens", 128)), bool(sp.get("ignore_eos", False)),
                _as_list(sp.get("stop")), float(sp.get("temperature", 1.0) or 0.0), make_sink(i), stream, rid))
        self._watch(conn, reqs, done)
        if stream:
            self.sim.log.access(req.client, req.method, req.target, 200, "OK")
            conn.start_stream()
            await self._run(reqs, done)
            conn.send(SSE_DONE)
            conn.end_stream()
            return
        await self._run(reqs, done)
        self.reply(conn, req, 200, results if batch else results[0])

    # ------------------------------------------------------------ OpenAI
    async def completions(self, req, conn):
        await self._openai(req, conn, chat=False)

    async def chat(self, req, conn):
        await self._openai(req, conn, chat=True)

    async def _openai(self, req, conn, chat: bool):
        if not req.headers.get("content-type", "").startswith("application/json"):
            self.reply(conn, req, 400, {"object": "error", "message": "Unsupported Media Type: Only 'application/json' is allowed", "type": "BadRequestError", "param": None, "code": 400})
            return
        body = self._json(req)
        sim = self.sim
        if chat:
            msgs = body.get("messages")
            if not isinstance(msgs, list) or not msgs:
                raise BadRequest("messages must be a non-empty list")
            prompt = "".join(f"<|im_{m.get('role', 'user')}|>{m.get('role', 'user')}<|im_middle|>{_content(m.get('content'))}<|im_end|>" for m in msgs if isinstance(m, dict))
            prompt_ids = textgen.token_ids(prompt + "<|im_assistant|>assistant<|im_middle|>")
            max_new = body.get("max_completion_tokens") or body.get("max_tokens")
            max_new = int(max_new) if max_new else sim.context_len - len(prompt_ids)
        else:
            prompt = body.get("prompt")
            if prompt is None:
                raise BadRequest("prompt is required")
            if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
                prompt_ids = list(prompt)
            else:
                prompt_ids = textgen.token_ids(prompt[0] if isinstance(prompt, list) else str(prompt))
            max_new = int(body.get("max_tokens") if body.get("max_tokens") is not None else 16)
        if (err := context_error(len(prompt_ids), max_new, sim.context_len)) is not None:
            self.reply(conn, req, 400, {"object": "error", "message": err, "type": "BadRequestError", "param": None, "code": 400})
            return
        stream = bool(body.get("stream", False))
        if self._queue_full():
            self._refuse_queue_full(req, conn, stream, "chat" if chat else "completions", body)
            return
        opts = body.get("stream_options") or {}
        include_usage = bool(opts.get("include_usage")) or sim.ns.stream_response_default_include_usage
        continuous_usage = bool(opts.get("continuous_usage_stats"))
        want_spec = bool(body.get("return_spec_tokens_details"))
        created = int(time.time())
        model = body.get("model") or sim.served_model_name
        obj = "chat.completion.chunk" if chat else "text_completion"
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        state = {"sent": 0, "first": True}

        def usage(r: SimRequest, streamed: bool = False) -> dict:
            # Real 0.5.23: chat usage always has the *_details keys; a streamed completions usage
            # chunk has them only with --enable-cache-report.
            u = {"prompt_tokens": r.prompt_tokens, "total_tokens": r.prompt_tokens + r.completion_tokens,
                 "completion_tokens": r.completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0,
                 "completion_tokens_details": None}
            if sim.ns.enable_cache_report:
                u["prompt_tokens_details"] = {"cached_tokens": r.cached_tokens}
            elif streamed and not chat:
                del u["prompt_tokens_details"], u["completion_tokens_details"]
            return u

        def chunk(choices, r, with_usage=False, extra=None):
            c = {"id": r.rid, "object": obj, "created": created, "model": model, "choices": choices}
            if with_usage:
                c["usage"] = usage(r, streamed=True)
            elif not chat:  # completions chunks carry "usage": null, chat chunks no key at all
                c["usage"] = None
            if extra:
                c.update(extra)
            return _sse(c)

        def sink(r: SimRequest):
            if not stream:
                if r.finish_reason is not None and not done.done():
                    done.set_result(None)
                return
            delta = r.text[state["sent"]:]
            state["sent"] = len(r.text)
            fin, matched = _oai_finish(r.finish_reason)
            out = []
            if chat:
                if state["first"]:
                    out.append(chunk([{"index": 0, "delta": {"reasoning_content": None, "role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None, "matched_stop": None}], r, continuous_usage))
                if delta:
                    out.append(chunk([{"index": 0, "delta": {"reasoning_content": None, "content": delta}, "logprobs": None, "finish_reason": None, "matched_stop": None}], r, continuous_usage))
                if fin:
                    out.append(chunk([{"index": 0, "delta": {"reasoning_content": None}, "logprobs": None, "finish_reason": fin, "matched_stop": matched}], r, continuous_usage))
            elif delta or fin:
                out.append(chunk([{"index": 0, "text": delta, "logprobs": None, "finish_reason": fin, "matched_stop": matched}], r, continuous_usage))
            state["first"] = False
            if fin:
                if want_spec and (details := self._spec_details(r)):
                    out.append(chunk([], r, False, {"sglext": {"spec_tokens_details": details}}))
                if include_usage:
                    out.append(chunk([], r, True))
            if out:
                conn.send(b"".join(out))
            if fin and not done.done():
                done.set_result(None)

        temperature = body.get("temperature")
        r = self._new_request(prompt_ids, max_new, bool(body.get("ignore_eos", False)), _as_list(body.get("stop")),
                              float(1.0 if temperature is None else temperature), sink, stream, body.get("rid"))
        self._watch(conn, [r], done)
        if stream:
            sim.log.access(req.client, req.method, req.target, 200, "OK")
            conn.start_stream()
            await self._run([r], done)
            conn.send(SSE_DONE)
            conn.end_stream()
            return
        await self._run([r], done)
        fin, matched = _oai_finish(r.finish_reason)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": r.text, "reasoning_content": None},
                      "logprobs": None, "finish_reason": fin, "matched_stop": matched}
        else:
            choice = {"index": 0, "text": r.text, "logprobs": None, "finish_reason": fin, "matched_stop": matched}
        resp = {"id": r.rid, "object": "chat.completion" if chat else "text_completion", "created": created,
                "model": model, "choices": [choice], "usage": usage(r),
                "metadata": {"weight_version": sim.ns.weight_version, "weight_versions": [
                    {"version": sim.ns.weight_version, "start": 0, "end": r.completion_tokens}]}}
        if want_spec and (details := self._spec_details(r)):
            resp["sglext"] = {"spec_tokens_details": details}
        self.reply(conn, req, 200, resp)


def _as_list(v) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else [s for s in v if isinstance(s, str)]


def _content(c) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


_GET = ("GET",)
ROUTES = {
    "/generate": (("POST", "PUT"), "generate"),
    "/v1/completions": (("POST",), "completions"),
    "/v1/chat/completions": (("POST",), "chat"),
    "/v1/models": (_GET, "models"),
    "/health": (_GET, "health"),
    "/health_generate": (_GET, "health"),
    "/ready": (_GET, "ready"),
    "/model_info": (_GET, "model_info"),
    "/get_model_info": (_GET, "model_info"),
    "/server_info": (_GET, "server_info"),
    "/get_server_info": (_GET, "server_info"),
    "/flush_cache": (("GET", "POST"), "flush_cache"),
    "/metrics": (_GET, "metrics"),
    "/v1/loads": (_GET, "v1_loads"),
    "/get_load": (_GET, "get_load"),
}

"""What an SGLang server says about itself: model, version, parallelism, speculation, args.

SGLang is told apart by ``/model_info`` or ``/server_info``; a server with neither that
answers ``/v1/models`` is another OpenAI-compatible server (``engine="openai"``): it gets
the standard API only (no /generate, no SGLang fields, no /flush_cache, no /metrics).

SGLang >= 0.4.x serves ``/model_info`` and ``/server_info``; older ones only
``/get_model_info`` and ``/get_server_info`` (newer ones keep those as deprecated
aliases that log a warning each call, so the new paths go first). ``/server_info`` is an
RPC into the scheduler and hangs when the scheduler is wedged: always bounded.
Secret-looking server args (``api_key``, ``admin_api_key``, ...) are masked.
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from tuiapp.common.http_clients import async_client
from tuiapp.common.net_errors import cause
from tuiapp.common.redact import redact_tree
from tuiapp.events import ServerInfo


class ServerUnreachable(Exception):
    """The URL does not answer as an SGLang (or OpenAI-compatible) server."""


class ModelsUnavailable(ServerUnreachable):
    """Not SGLang, and ``/v1/models`` failed: a probe request may still find it serving
    (tuiapp/server/discovery.py)."""


def server_message(resp: httpx.Response, limit: int = 160) -> str:
    """The server's own words for a failed request: the JSON ``detail``/``error``/``message``
    (FastAPI, OpenAI and SGLang spell it differently), else the first line of the body."""
    try:
        body: Any = resp.json()
    except ValueError:
        body = None
    for _ in range(3):  # {"error": {"message": ...}} nests
        if isinstance(body, dict):
            body = next((body[k] for k in ("detail", "error", "message") if body.get(k)), None)
    text = body if isinstance(body, str) else ""
    if not text:
        text = next((ln.strip() for ln in resp.text.splitlines() if ln.strip()), "")
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


def _http_failure(base_url: str, path: str, resp: httpx.Response) -> str:
    said = server_message(resp)
    return f"GET {base_url}{path}: HTTP {resp.status_code} {resp.reason_phrase}".rstrip() + (f": {said}" if said else "")


async def _get_json(client: httpx.AsyncClient, base_url: str, paths: tuple[str, ...], timeout_s: float,
                    failures: list[str] | None = None, *, silent_ok: bool = False) -> dict[str, Any] | None:
    for path in paths:
        try:
            resp = await client.get(base_url + path, timeout=timeout_s)
        except httpx.TimeoutException as exc:
            if silent_ok:
                continue  # /server_info of a wedged scheduler, after /model_info answered
            # A server that accepts the connection and never answers: asking its other
            # endpoints would only wait as long again.
            what = "no connection" if isinstance(exc, httpx.ConnectTimeout) else "no answer"
            raise ServerUnreachable(f"GET {base_url}{path}: {what} within {timeout_s:g} s") from None
        if resp.status_code in (401, 403):
            raise ServerUnreachable(_http_failure(base_url, path, resp) + " (wrong or missing --api-key?)")
        if resp.status_code != 200:
            if failures is not None:
                failures.append(_http_failure(base_url, path, resp))
            continue
        try:
            data = resp.json()
        except ValueError:
            continue
        if isinstance(data, dict):
            return decode_side(data)
    return None


def decode_side(data: dict[str, Any]) -> dict[str, Any]:
    """A PD-disaggregation router answers ``{"decode": [server, ...]}``: describe the
    decode side (as sglang's bench does); any other answer is the server itself."""
    decode = data.get("decode")
    if isinstance(decode, list) and decode and isinstance(decode[0], dict):
        return decode[0]
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


async def fetch_server_info(base_url: str, *, api_key: str | None = None, timeout_s: float = 5.0,
                            client: httpx.AsyncClient | None = None, model: str | None = None) -> ServerInfo:
    """Ask the server; raise :class:`ServerUnreachable` (one-line message) if it does not answer.
    ``client``: the session's client of this server (carrying ``api_key``), else one of its own.
    ``model``: the name the user gave; a server that is not SGLang is then not asked for
    ``/v1/models``."""
    base_url = base_url.rstrip("/")
    named = model
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(async_client(base_url, api_key=api_key, timeout=timeout_s))
        failures: list[str] = []
        try:
            model = await _get_json(client, base_url, ("/model_info", "/get_model_info"), timeout_s)
            server = await _get_json(client, base_url, ("/server_info", "/get_server_info"), timeout_s,
                                     silent_ok=model is not None)
            engine = "sglang"
            if model is None and server is None:
                engine = "openai"
                # An OpenAI-compatible server that is not SGLang still gets a benchmark.
                if named is not None:
                    model_data: dict[str, Any] | None = {"data": [{"id": named}]}
                else:
                    model_data = await _get_json(client, base_url, ("/v1/models",), timeout_s, failures)
                if model_data is None:
                    why = f" ({failures[-1]})" if failures else " (GET /v1/models: no JSON object)"
                    raise ModelsUnavailable(
                        f"{base_url} answers, but not as an SGLang or OpenAI-compatible server{why}")
                data = model_data.get("data")
                first = data[0] if isinstance(data, list) and data else None
                model = {"model_path": first.get("id") if isinstance(first, dict) else None}
        except httpx.ConnectError as exc:
            raise ServerUnreachable(f"cannot connect to {base_url}: {cause(exc)}") from None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"{base_url}: {type(exc).__name__}: {cause(exc)}") from None
    model = model or {}
    server = server or {}
    args = {k: v for k, v in server.items() if k not in ("internal_states", "version")}
    return ServerInfo(
        url=base_url,
        model_path=_str(model.get("model_path")) or _str(server.get("model_path")),
        engine=engine,
        version=_str(server.get("version")),
        tp_size=_int(server.get("tp_size")),
        ep_size=_int(server.get("ep_size")),
        speculative_algorithm=_str(server.get("speculative_algorithm")),
        speculative_num_steps=_int(server.get("speculative_num_steps")),
        speculative_eagle_topk=_int(server.get("speculative_eagle_topk")),
        speculative_num_draft_tokens=_int(server.get("speculative_num_draft_tokens")),
        server_args=redact_tree(args, extra=[api_key]),
    )

"""What an SGLang server says about itself: model, version, parallelism, speculation, args.

SGLang >= 0.4.x serves ``/model_info`` and ``/server_info``; older ones only
``/get_model_info`` and ``/get_server_info`` (newer ones keep those as deprecated
aliases that log a warning each call, so the new paths go first). ``/server_info`` is an
RPC into the scheduler and hangs when the scheduler is wedged: always bounded.
Secret-looking server args (``api_key``, ``admin_api_key``, ...) are masked.
"""

from __future__ import annotations

from typing import Any

import httpx

from tuiapp.events import ServerInfo
from tuiapp.server.redact import redact_tree


class ServerUnreachable(Exception):
    """The URL does not answer as an SGLang (or OpenAI-compatible) server."""


async def _get_json(client: httpx.AsyncClient, base_url: str, paths: tuple[str, ...]) -> dict[str, Any] | None:
    for path in paths:
        try:
            resp = await client.get(base_url + path)
        except httpx.TimeoutException:
            continue
        if resp.status_code in (401, 403):
            raise ServerUnreachable(f"{base_url}{path}: HTTP {resp.status_code} (wrong or missing --api-key?)")
        if resp.status_code != 200:
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


async def fetch_server_info(base_url: str, *, api_key: str | None = None, timeout_s: float = 5.0) -> ServerInfo:
    """Ask the server; raise :class:`ServerUnreachable` (one-line message) if it does not answer."""
    base_url = base_url.rstrip("/")
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(headers=headers, timeout=timeout_s, trust_env=False) as client:
        try:
            model = await _get_json(client, base_url, ("/model_info", "/get_model_info"))
            server = await _get_json(client, base_url, ("/server_info", "/get_server_info"))
            if model is None and server is None:
                # An OpenAI-compatible server that is not SGLang still gets a benchmark.
                models = await _get_json(client, base_url, ("/v1/models",))
                if models is None:
                    raise ServerUnreachable(f"{base_url} answers, but not as an SGLang or OpenAI-compatible server")
                data = models.get("data")
                first = data[0] if isinstance(data, list) and data else None
                model = {"model_path": first.get("id") if isinstance(first, dict) else None}
        except httpx.ConnectError:
            raise ServerUnreachable(f"cannot connect to {base_url}") from None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"{base_url}: {type(exc).__name__}") from None
    model = model or {}
    server = server or {}
    args = {k: v for k, v in server.items() if k not in ("internal_states", "version")}
    return ServerInfo(
        url=base_url,
        model_path=_str(model.get("model_path")) or _str(server.get("model_path")),
        version=_str(server.get("version")),
        tp_size=_int(server.get("tp_size")),
        ep_size=_int(server.get("ep_size")),
        speculative_algorithm=_str(server.get("speculative_algorithm")),
        speculative_num_steps=_int(server.get("speculative_num_steps")),
        speculative_eagle_topk=_int(server.get("speculative_eagle_topk")),
        speculative_num_draft_tokens=_int(server.get("speculative_num_draft_tokens")),
        server_args=redact_tree(args, extra=[api_key]),
    )

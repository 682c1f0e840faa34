"""What to send to a server, found in the ways that still work (docs/attach.md "Discovery").

1. ``--api`` and ``--model`` both given: nothing needs discovering; the server is asked for
   its info for the header only, and a failure there is a note, not an error.
2. SGLang answers ``/model_info``/``/server_info``; another OpenAI-compatible server
   ``/v1/models`` (its first model is named in requests), or a given ``--model`` is used.
3. A ``/v1/models`` that fails (transformers serve 5.17 answers 500 when its hub cache
   folder is missing): one small chat request without a model name; when it is served,
   requests name no model (the server serves the one it has) and a note says why.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import httpx

from tuiapp.common.http_clients import async_client
from tuiapp.events import ServerInfo
from tuiapp.server.info import (
    ModelsUnavailable,
    ServerUnreachable,
    fetch_server_info,
    server_message,
)

PROBE_BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "stream": False}


@dataclass
class Discovery:
    info: ServerInfo
    model: str | None  # the name requests carry (None: whatever the loop finds, or none)
    name_no_model: bool = False  # the server serves requests that name no model: send none
    notes: list[str] = field(default_factory=list)


async def probe_unnamed(client: httpx.AsyncClient, base_url: str, timeout_s: float) -> tuple[str | None, str]:
    """A one-token chat request that names no model: (the model the answer names, "") when
    served, else (None, why not)."""
    try:
        resp = await client.post(base_url + "/v1/chat/completions", json=PROBE_BODY, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return None, f"a probe request failed: {type(exc).__name__}"
    if resp.status_code != 200:
        said = server_message(resp)
        return None, f"a probe request naming no model: HTTP {resp.status_code}" + (f": {said}" if said else "")
    try:
        named = resp.json().get("model")
    except (ValueError, AttributeError):
        named = None
    return (named if isinstance(named, str) else ""), ""


async def discover(base_url: str, *, api: str = "auto", model: str | None = None, api_key: str | None = None,
                   timeout_s: float = 5.0, client: httpx.AsyncClient | None = None) -> Discovery:
    """The server's info and the model name to send; :class:`ServerUnreachable` (one line)
    when no way works."""
    base_url = base_url.rstrip("/")
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(async_client(base_url, api_key=api_key, timeout=timeout_s))
        try:
            info = await fetch_server_info(base_url, api_key=api_key, timeout_s=timeout_s, client=client,
                                           model=model)
            return Discovery(info, model or (info.model_path if info.engine != "sglang" else None))
        except ModelsUnavailable as exc:
            failed = str(exc)
        except ServerUnreachable as exc:
            if api == "auto" or model is None or "cannot connect" in str(exc) or "api-key" in str(exc):
                raise
            # everything needed was given: the info is for the header only
            engine = "sglang" if api == "generate" else "openai"
            return Discovery(ServerInfo(url=base_url, model_path=model, engine=engine), model,
                             notes=[f"server info unavailable ({exc}); benchmarking with --api {api} --model {model}"])
        served, why = await probe_unnamed(client, base_url, timeout_s)
    if served is None:
        raise ServerUnreachable(f"{failed}; {why} (--model NAME names the model)")
    cause = failed.rsplit(" (", 1)[-1].rstrip(")")
    note = (f"{cause}; a request naming no model was served, so requests name none"
            f" (--model NAME to name one)")
    return Discovery(ServerInfo(url=base_url, model_path=served or None, engine="openai"), None,
                     name_no_model=True, notes=[note])

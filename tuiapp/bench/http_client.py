"""The benchmark loop's one HTTP client: httpx (probes, polls, https, proxies) on the lean
transport, with the benchmark's own POSTs to a plain-http server written straight to a kept
connection (``BenchClient.open_post``)."""

from __future__ import annotations

from typing import Any

import httpx

from tuiapp.bench.settings import Timeouts
from tuiapp.common.lean_transport import LeanTransport


def make_client(timeouts: Timeouts, *, api_key: str | None, concurrency: int) -> BenchClient:
    """The one client a loop reuses: keep-alive pool sized to the concurrency."""
    headers = {"content-type": "application/json", "accept-encoding": "identity"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    # httpx's read timeout is a backstop; the loop's watchdog enforces first-token/stall.
    read_s = max(timeouts.first_token_s, timeouts.stall_s) + 5.0
    pool = concurrency + 4
    return BenchClient(
        LeanTransport(
            connect_timeout_s=timeouts.connect_s,
            max_idle=max(pool, 256),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
        ),
        headers=headers,
        timeout=httpx.Timeout(connect=timeouts.connect_s, read=read_s, write=30.0, pool=None),
        trust_env=False,
    )


class BenchClient(httpx.AsyncClient):
    """httpx's client (probes, polls, https, proxies), whose benchmark POSTs to a plain-http
    server skip httpx's request building (``LeanTransport.post``): a closed loop's burst of
    sends is then as tight as a lean client's."""

    def __init__(self, lean: LeanTransport, **kwargs: Any) -> None:
        super().__init__(transport=lean, **kwargs)
        self.lean = lean
        self._heads: dict[str, tuple[httpx.URL, bytes | None]] = {}

    async def open_post(self, url: str, payload: bytes) -> tuple[httpx.Response, float | None]:
        """The response to POSTing ``payload`` (its body a stream, for the caller to close)
        and when the request's bytes left (None where the transport does not say)."""
        got = self._heads.get(url)
        if got is None:
            parsed = httpx.URL(url)
            got = self._heads[url] = (parsed, self.lean.post_head(parsed, self.headers))
        parsed, head = got
        if head is None:
            return await _httpx_post(self, parsed, payload)
        return await self.lean.post(parsed, head, payload)


async def open_post(client: httpx.AsyncClient, url: str, payload: bytes) -> tuple[httpx.Response, float | None]:
    """``BenchClient.open_post`` for any httpx client (a plain one goes through httpx)."""
    if isinstance(client, BenchClient):
        return await client.open_post(url, payload)
    return await _httpx_post(client, url, payload)


async def _httpx_post(client: httpx.AsyncClient, url: httpx.URL | str,
                      payload: bytes) -> tuple[httpx.Response, float | None]:
    resp = await client.send(client.build_request("POST", url, content=payload), stream=True)
    return resp, resp.request.extensions.get("sent_s")  # the lean transport's send stamp, if it sent it

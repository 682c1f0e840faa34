"""HTTP clients for talking to one server: built once, shared, and cheap for plain http.

An ``httpx`` client built with the defaults loads the CA bundle into a fresh SSL context:
~20-46 ms of CPU per client, paid even for ``http://``. The monitor talks to a server
from several places (health poll, server info, metrics poller, GPU telemetry, cache flush),
once per trial, so it shares one :class:`ServerClient` per server for the life of that
server's session: one ``AsyncClient`` on the event loop, which telemetry threads use
through a bridge, built lazily; plain http goes through the benchmark's lean transport
without any SSL context, https and proxied requests through httpx's with one context built
once per process (trust and proxies: common/net_config.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl

import httpx

from tuiapp.common import net_config

# The polls' default; a caller may pass its own per request (httpx allows timeout= on get).
DEFAULT_TIMEOUT = httpx.Timeout(2.0, connect=1.0)


def tls_context() -> ssl.SSLContext:
    """The process's SSL context (--ca-cert, --insecure, else the system store), built on
    first https use and shared by every client."""
    return net_config.current_ssl_context()


def verify_for(url: str) -> ssl.SSLContext | bool:
    """What to pass as ``verify=``: the shared context for https; False for http (no
    redirects are followed, so an http client never meets TLS and needs no context)."""
    return tls_context() if url.lower().startswith("https:") else False


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def async_client(url: str, *, api_key: str | None = None,
                 timeout: httpx.Timeout | float = DEFAULT_TIMEOUT) -> httpx.AsyncClient:
    """For polls on the event loop: the benchmark's lean plain-http transport (httpx's own
    stack costs ~1 ms of CPU per request; the lean one a tenth), httpx's for https. Read
    timeouts bound the wait for the response head (a wedged /server_info never answers)."""
    from tuiapp.common.lean_transport import LeanTransport

    connect_s = timeout.connect if isinstance(timeout, httpx.Timeout) else timeout
    # trust_env=False: the transport routes by the environment's proxies itself (common/net_config.py)
    return PollClient(headers=auth_headers(api_key), timeout=timeout, trust_env=False,
                      transport=LeanTransport(connect_timeout_s=connect_s or 5.0, max_idle=4, stream_wake_s=0.0))


class PollClient(httpx.AsyncClient):
    """An AsyncClient whose plain GETs (the polls: GPUs, /metrics, /health, server info, each
    once a second or so) go straight to the lean transport with a request built once per
    URL. httpx's own path builds the request again (URL merge, headers, cookies) and runs the
    auth, redirect and cookie-extraction steps for every response: about two thirds of a
    poll's CPU, for steps a poll never uses (no auth flow, no redirects followed, no cookies)."""

    _MAX_REQUESTS = 64  # distinct poll URLs seen; a caller building URLs freely just resets it

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        from tuiapp.common.lean_transport import LeanTransport, _within

        self._within = _within
        transport = kwargs.get("transport")
        self._lean = transport if isinstance(transport, LeanTransport) else None
        self._requests: dict[tuple[str, object], httpx.Request | None] = {}  # None: not lean

    async def get(self, url, *, timeout=httpx.USE_CLIENT_DEFAULT, **kwargs) -> httpx.Response:
        hooks = self.event_hooks
        if (self._lean is None or kwargs or not isinstance(url, str) or not url.startswith("http://")
                or self.is_closed or hooks["request"] or hooks["response"]):
            return await super().get(url, timeout=timeout, **kwargs)
        key = (url, tuple(timeout.as_dict().items()) if isinstance(timeout, httpx.Timeout)
               else timeout if isinstance(timeout, (int, float)) else None)
        request = self._requests.get(key, False)
        if request is False:
            if len(self._requests) >= self._MAX_REQUESTS:
                self._requests.clear()
            request = self.build_request("GET", url, timeout=timeout)
            if self._lean.is_lean(request.url):
                # the deadline below is the only one: the transport adds none of its own
                request.extensions["deadline_outside"] = True
            else:  # a proxy carries it: httpx's own path, every time
                request = None
            self._requests[key] = request
        if request is None:
            return await super().get(url, timeout=timeout, **kwargs)
        # One deadline over the whole response, head and body: a poll's answer comes within its
        # read timeout or the poll fails (a body that trickles in must not hold it either).
        read_s = (request.extensions.get("timeout") or {}).get("read")
        try:
            return await self._within(self._read_whole(request), read_s)
        except asyncio.TimeoutError:
            raise httpx.ReadTimeout(f"{request.url.host}:{request.url.port or 80}: "
                                    f"no whole response within {read_s:g} s", request=request) from None

    async def _read_whole(self, request: httpx.Request) -> httpx.Response:
        response = await self._lean.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response


def sync_client(url: str, *, api_key: str | None = None,
                timeout: httpx.Timeout | float = DEFAULT_TIMEOUT, **kwargs) -> httpx.Client:
    from tuiapp.common.routed_transport import RoutedTransport

    # `url` no longer picks the SSL context: the transport builds one only for https or a proxy
    return httpx.Client(headers=auth_headers(api_key), timeout=timeout, trust_env=False,
                        transport=RoutedTransport(), **kwargs)


class LoopBridge:
    """The session's async client, for a thread: ``get`` runs on the event loop and the
    thread waits for it (telemetry backends call from their own threads)."""

    def __init__(self, client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed or self._loop.is_closed()

    @property
    def aio(self) -> httpx.AsyncClient:
        """The async client behind the bridge, for callers on its own loop."""
        return self._client

    def get(self, url: str, *, timeout: float) -> httpx.Response:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RuntimeError("LoopBridge.get would block its own event loop: call it from a thread")
        try:
            future = asyncio.run_coroutine_threadsafe(self._client.get(url, timeout=timeout), self._loop)
        except RuntimeError:  # the loop has closed: the session is over
            raise httpx.TransportError("session closed") from None
        try:
            return future.result(timeout + 1.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise httpx.ReadTimeout(f"no answer from {url} in {timeout:g} s") from None
        except (concurrent.futures.CancelledError, RuntimeError):
            raise httpx.TransportError("session closed") from None

    def close(self) -> None:
        """The session owns the client: nothing to release here."""


class ServerClient:
    """The client of one server, for one session: ``aio`` on the event loop that first
    asks for it, ``sync`` (the same client, bridged) for threads. ``aclose()`` at the end."""

    def __init__(self, url: str, api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self._aio: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def aio(self) -> httpx.AsyncClient:
        """Ask from the event loop that will use it."""
        if self._aio is None:
            self._loop = asyncio.get_running_loop()
            self._aio = async_client(self.url, api_key=self.api_key)
        return self._aio

    @property
    def sync(self) -> LoopBridge:
        """Ask from the event loop (the threads that use it have none)."""
        client = self.aio
        assert self._loop is not None
        return LoopBridge(client, self._loop)

    async def aclose(self) -> None:
        aio, self._aio = self._aio, None
        if aio is not None:
            await aio.aclose()

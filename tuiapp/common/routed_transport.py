"""httpx's own transports, one per route (direct or through a proxy), with the process's trust
(common/net_config.py) and errors that name the host and the cause (common/net_errors.py).

The lean transport hands these everything that is not plain http straight to a host:
https, and anything a proxy carries."""

from __future__ import annotations

import httpx

from tuiapp.common import net_config
from tuiapp.common.net_errors import explained


class RoutedAsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, limits: httpx.Limits | None = None) -> None:
        self._limits = limits or httpx.Limits()
        self._routes = net_config.routes_now()
        self._by_proxy: dict[str | None, httpx.AsyncHTTPTransport] = {}

    def proxy_for(self, url: httpx.URL) -> str | None:
        return self._routes.proxy_for(url)

    def _transport(self, proxy: str | None) -> httpx.AsyncHTTPTransport:
        t = self._by_proxy.get(proxy)
        if t is None:
            # built on first use: its SSL context costs ~20 ms (shared once built)
            t = self._by_proxy[proxy] = httpx.AsyncHTTPTransport(
                verify=net_config.current_ssl_context(), limits=self._limits, proxy=proxy, trust_env=False)
        return t

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = self._routes.proxy_for(request.url)
        try:
            return await self._transport(proxy).handle_async_request(request)
        except httpx.TransportError as exc:
            raise explained(exc, request, proxy) from exc

    async def aclose(self) -> None:
        for t in self._by_proxy.values():
            await t.aclose()
        self._by_proxy.clear()


class RoutedTransport(httpx.BaseTransport):
    """The same, for the synchronous client (GPU exporters, the simulator check)."""

    def __init__(self) -> None:
        self._routes = net_config.routes_now()
        self._by_proxy: dict[str | None, httpx.HTTPTransport] = {}

    def _transport(self, proxy: str | None, https: bool) -> httpx.HTTPTransport:
        key = (proxy, https)
        t = self._by_proxy.get(key)
        if t is None:
            # plain http straight to a host needs no SSL context (loading one costs ~20 ms)
            verify = net_config.current_ssl_context() if https or proxy else False
            t = self._by_proxy[key] = httpx.HTTPTransport(verify=verify, proxy=proxy, trust_env=False)
        return t

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        proxy = self._routes.proxy_for(request.url)
        try:
            return self._transport(proxy, request.url.scheme == "https").handle_request(request)
        except httpx.TransportError as exc:
            raise explained(exc, request, proxy) from exc

    def close(self) -> None:
        for t in self._by_proxy.values():
            t.close()
        self._by_proxy.clear()

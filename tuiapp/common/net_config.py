"""How this process reaches servers: which certificates it trusts and which proxy carries what.

One setting per process (``configure`` from the command line's ``--ca-cert``, ``--insecure``,
``--proxy``), read when a client is built. Trust: the system's store (OpenSSL's default
paths, which honour ``SSL_CERT_FILE``/``SSL_CERT_DIR``; certifi's bundle only where the
system has none), or ``--ca-cert FILE`` instead of it, or no check at all (``--insecure``).
Proxies: ``--proxy URL``, else ``http_proxy``/``https_proxy``/``all_proxy`` (either case) from
the environment; ``no_proxy`` is honoured for both. Loopback hosts are always reached directly
(as Go's net/http does): the servers tuiapp launches listen there, and a proxy set for the
outside world must not carry a poll of them; that also keeps them on the lean transport.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import ssl
import urllib.request
from dataclasses import dataclass, field

import httpx

from tuiapp.common.errors import UsageError

_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


@dataclass(frozen=True)
class NetOptions:
    ca_cert: str | None = None
    insecure: bool = False
    proxy: str | None = None  # for every non-loopback host not in no_proxy; None: the environment's
    env: dict[str, str] | None = field(default=None, compare=False, hash=False)  # None: os.environ


_options = NetOptions()


def configure(options: NetOptions) -> None:
    """Set the process's options, checked now: a bad file or proxy URL is a UsageError."""
    global _options
    if options.insecure and options.ca_cert:
        raise UsageError("--ca-cert and --insecure are exclusive")
    if options.ca_cert is not None:
        try:
            ssl_context(options.ca_cert, False)
        except FileNotFoundError:
            raise UsageError(f"--ca-cert {options.ca_cert}: no such file") from None
        except IsADirectoryError:
            raise UsageError(f"--ca-cert {options.ca_cert}: is a directory") from None
        except (ssl.SSLError, OSError) as exc:
            why = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"--ca-cert {options.ca_cert}: not a PEM certificate file ({why})") from None
    routes = Routes(options)
    for scheme, url in routes.proxies.items():
        _check_proxy(url, "--proxy" if options.proxy else f"{scheme}_proxy")
    _options = options
    routes_now.cache_clear()


def options() -> NetOptions:
    return _options


def reset() -> None:
    """Back to the defaults (tests)."""
    global _options
    _options = NetOptions()
    routes_now.cache_clear()


def _check_proxy(url: str, where: str) -> None:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UsageError(f"{where} {url!r}: {exc}") from None
    if parsed.scheme not in _PROXY_SCHEMES or not parsed.host:
        raise UsageError(f"{where} {url!r}: not a proxy URL (http://HOST:PORT, https:// or socks5://)")
    if parsed.scheme.startswith("socks"):
        try:
            import socksio  # noqa: F401
        except ImportError:
            raise UsageError(f"{where} {url!r}: SOCKS proxies need the socksio package "
                             "(pip install 'httpx[socks]')") from None


@functools.cache
def ssl_context(ca_cert: str | None, insecure: bool) -> ssl.SSLContext:
    """The verifying context (built once per choice: loading a store costs ~20 ms)."""
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if ca_cert is not None:
        return ssl.create_default_context(cafile=ca_cert)
    ctx = ssl.create_default_context()
    paths = ssl.get_default_verify_paths()
    if paths.cafile is None and paths.capath is None:  # no system store here (some Pythons)
        import certifi

        ctx.load_verify_locations(cafile=certifi.where())
    return ctx


def current_ssl_context() -> ssl.SSLContext:
    return ssl_context(_options.ca_cert, _options.insecure)


def is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0: this host, as a server's --host


class Routes:
    """Which proxy (or none) carries a request to scheme://host:port; answers are cached."""

    def __init__(self, options: NetOptions) -> None:
        env = os.environ if options.env is None else options.env
        found = _environment_proxies(env)
        self._no_proxy = found.pop("no", "")
        if options.proxy:
            self.proxies = {"all": options.proxy}
        else:
            self.proxies = {k: v for k, v in found.items() if k in ("http", "https", "all") and v}
        self.any = bool(self.proxies)
        self._cache: dict[tuple[str, str, int | None], str | None] = {}

    def proxy_for(self, url: httpx.URL) -> str | None:
        if not self.any:
            return None
        key = (url.scheme, url.host, url.port)
        try:
            return self._cache[key]
        except KeyError:
            pass
        proxy = self.proxies.get(url.scheme) or self.proxies.get("all")
        host = url.host
        if proxy and (is_loopback(host) or self._bypassed(host, url.port)):
            proxy = None
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[key] = proxy
        return proxy

    def _bypassed(self, host: str, port: int | None) -> bool:
        if not self._no_proxy:
            return False
        target = f"{host}:{port}" if port else host
        return bool(urllib.request.proxy_bypass_environment(target, {"no": self._no_proxy}))


def _environment_proxies(env) -> dict[str, str]:
    # urllib's reading (lower case wins; HTTP_PROXY is ignored under CGI, where a client's
    # "Proxy:" header would set it), applied to the given mapping
    saved = os.environ
    if env is saved:
        return urllib.request.getproxies_environment()
    proxies: dict[str, str] = {}
    for name, value in env.items():
        low = name.lower()
        if value and low.endswith("_proxy"):
            scheme = low[:-6]
            if name == low or scheme not in proxies:
                proxies[scheme] = value
    if "REQUEST_METHOD" in env:
        proxies.pop("http", None)
    return proxies


@functools.cache
def routes_now() -> Routes:
    return Routes(_options)

"""The options of every command that reaches a server over the network: trust and proxies
(common/net_config.py; docs/http.md)."""

from __future__ import annotations

import argparse


def add_net_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TLS and proxies (see docs/http.md)")
    group.add_argument("--ca-cert", metavar="FILE",
                       help="trust the CA certificates in FILE (PEM) for https, instead of the system store")
    group.add_argument("--insecure", action="store_true",
                       help="do not verify https certificates (a test server's self-signed one)")
    group.add_argument("--proxy", metavar="URL",
                       help="send requests through this proxy (default: http_proxy/https_proxy/all_proxy;"
                            " no_proxy and loopback hosts go direct)")


def apply_net_arguments(args: argparse.Namespace) -> None:
    """Set the process's trust and proxies from ``args``; a bad value is a UsageError."""
    from tuiapp.common.net_config import NetOptions, configure

    configure(NetOptions(ca_cert=args.ca_cert, insecure=args.insecure, proxy=args.proxy))


def check_url(raw: str, what: str, *, bare_host: bool = False) -> str:
    """``raw`` as a base URL without a trailing slash, or a one-line UsageError naming ``what``
    (``--dcgm``, ``--sim``). ``bare_host``: ``host:port`` is taken as ``http://host:port``."""
    import httpx

    from tuiapp.common.errors import UsageError

    url = raw.strip().rstrip("/")
    if bare_host and "://" not in url:
        url = "http://" + url
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"{what}: URL must start with http:// or https:// (got {raw!r})")
    if any(c.isspace() for c in url):
        raise UsageError(f"{what}: bad URL {raw!r}: it has spaces")
    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL as exc:
        raise UsageError(f"{what}: bad URL {raw!r}: {exc}") from None
    if not host:
        raise UsageError(f"{what}: URL has no host (got {raw!r})")
    return url

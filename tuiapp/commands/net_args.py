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

"""``--metrics-port``/``--metrics-host``: the options of every command that can serve its
session's figures to Prometheus (tuiapp/record/metrics_endpoint.py), and starting that endpoint."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve the session's figures for Prometheus at http://HOST:PORT/metrics")
    parser.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                        help="address the metrics endpoint binds (default 127.0.0.1; 0.0.0.0 for every interface)")


def start(args: argparse.Namespace):
    """The bound endpoint, or None without --metrics-port; a port that cannot be bound is a
    usage error (one line, exit 2) before anything is launched."""
    port = getattr(args, "metrics_port", None)
    if port is None:
        return None
    from tuiapp.common.errors import UsageError

    if not 0 <= port <= 65535:
        raise UsageError(f"--metrics-port {port}: not a port (0-65535)")
    from tuiapp.record.metrics_endpoint import MetricsEndpoint  # only imported when asked for

    try:
        return MetricsEndpoint(args.metrics_host, port)
    except OSError as exc:
        raise UsageError(f"--metrics-port {port}: cannot serve on {args.metrics_host}:{port}: "
                         f"{exc.strerror or exc}") from None

"""Is the port the server wants already taken? Checked before a launch, so a clash costs
a second instead of a model load that ends in ``address already in use``."""

from __future__ import annotations

import errno
import socket

from tuiapp.server.command import connect_host


def port_in_use(host: str, port: int) -> bool:
    """True when something listens on ``host:port`` or the address cannot be bound.

    Binds the way uvicorn does (SO_REUSEADDR, so sockets in TIME_WAIT do not count) and
    also tries to connect, which catches a listener on a more specific address than ours.
    """
    if _accepts_connection(connect_host(host), port):
        return True
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return False  # an unknown host is the server's error to report, not a port clash
    for family, type_, proto, _name, addr in infos:
        with socket.socket(family, type_, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(addr)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def _accepts_connection(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (for tests and the demo)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]

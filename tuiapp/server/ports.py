"""Is the port the server wants already taken? Checked before a launch, so a clash costs
a second instead of a model load that ends in ``address already in use``."""

from __future__ import annotations

import errno
import random
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


# Where free_port() looks. Below Linux's default ip_local_port_range (32768-60999): the kernel
# hands those to every outgoing connection and to every bind(0), so a port found free by
# binding 0 and releasing it is soon handed to someone else, often another server a
# parallel test is starting, which then answers our /health or takes our port first.
# A random pick in this range clashes only with another pick of the same port.
_PICK_PORTS = range(20000, 32000)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (for tests and the demo)."""
    pick = random.Random()  # seeded from the OS: parallel workers pick apart
    for _ in range(100):
        port = pick.choice(_PICK_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))  # no SO_REUSEADDR: a port in TIME_WAIT is skipped too
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))  # that range is full (or not ours to bind): the kernel's choice
        return sock.getsockname()[1]

"""One line for why a server could not be reached: the cause in words, never ``os.strerror`` of
an errno that is not one (an SSL error's 1 reads "Operation not permitted", a resolver's -2
"Unknown error -2")."""

from __future__ import annotations

import socket
import ssl

import httpx

_HINT_TRUST = "--ca-cert FILE trusts its CA, --insecure skips the check"


def _chain(exc: BaseException):
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]


def cause(exc: BaseException) -> str:
    """The cause of a failed request, one line, without the host (callers name it)."""
    for e in _chain(exc):
        if isinstance(e, ssl.SSLCertVerificationError):
            # set by the handshake; an error made elsewhere may lack them
            said = getattr(e, "verify_message", None) or getattr(e, "reason", None) or "verification failed"
            return f"certificate not trusted: {said} ({_HINT_TRUST})"
        if isinstance(e, ssl.SSLError):
            reason = getattr(e, "reason", None) or e.strerror or str(e)
            if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
                return f"TLS handshake failed: {reason} (is it plain http?)"
            return f"TLS handshake failed: {reason}"
        if isinstance(e, socket.gaierror):
            return f"name resolution failed: {e.strerror or e}"
        if isinstance(e, ConnectionRefusedError):
            return "Connection refused"  # the OS's words, as every other tool prints them
        if isinstance(e, ConnectionResetError):
            return "Connection reset by peer"
    top = exc
    if isinstance(top, httpx.ProxyError):
        return f"proxy refused the tunnel: {top}"
    if isinstance(top, httpx.ConnectTimeout):
        return "connect timed out"
    if isinstance(top, httpx.TimeoutException):
        return f"timed out ({type(top).__name__})"
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno and e.errno > 0 and e.strerror:
            return e.strerror
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def where(url: httpx.URL) -> str:
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{url.host}:{port}"


def explained(exc: httpx.TransportError, request: httpx.Request, proxy: str | None) -> httpx.TransportError:
    """The same kind of httpx error, its message naming the host (and proxy) and the cause."""
    via = f" via proxy {httpx.URL(proxy).host}:{httpx.URL(proxy).port}" if proxy else ""
    new = type(exc)(f"{where(request.url)}{via}: {cause(exc)}", request=request)
    return new

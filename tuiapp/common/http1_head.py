"""An HTTP/1.1 response head, parsed: what the lean transport needs to frame the body."""

from __future__ import annotations

from typing import NamedTuple

import httpx


class Head(NamedTuple):
    status_code: int
    headers: list[tuple[bytes, bytes]]
    length: int | None  # Content-Length; None: none given
    chunked: bool
    keep: bool  # the connection may serve the next request


def parse_head(raw: bytes) -> Head:
    """``raw``: the head without its final empty line. A malformed status line or
    Content-Length is ``httpx.RemoteProtocolError``, as httpx's own transport raises."""
    lines = raw.split(b"\r\n")
    try:
        version, status, *_ = lines[0].split(b" ", 2)
        status_code = int(status)
    except ValueError:
        raise httpx.RemoteProtocolError(f"bad status line {lines[0][:80]!r}") from None
    headers = []
    length = None
    chunked = False
    keep = version == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip(), value.strip()
        headers.append((name, value))
        low = name.lower()
        if low == b"content-length":
            # RFC 9112 6.3: digits only; repeated values must agree (int() takes "+5", "-1", " 5")
            if value.isdigit():
                new = int(value)
            else:
                values = {v.strip() for v in value.split(b",")}
                if len(values) != 1 or not all(v.isdigit() for v in values):
                    raise httpx.RemoteProtocolError(f"bad Content-Length {value[:40]!r}")
                new = int(values.pop())
            if length is not None and new != length:
                raise httpx.RemoteProtocolError("conflicting Content-Length headers")
            length = new
        elif low == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif low == b"connection":
            keep = value.lower() != b"close" if keep else value.lower() == b"keep-alive"
    return Head(status_code, headers, length, chunked, keep)

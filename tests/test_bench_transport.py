"""The lean HTTP/1.1 transport: framing split at every byte, keep-alive, closed connections."""

import asyncio

import httpx
import pytest

from tuiapp.common.lean_transport import LeanTransport

CHUNKED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    b"6\r\ndata: \r\n"
    b"c\r\n{\"a\": 1}\n\n\r\n\r\n"
    b"10;ext=1\r\ndata: [DONE]\n\n  \r\n"
    b"0\r\nx-trailer: 1\r\n\r\n"
)
BODY = b'data: {"a": 1}\n\n\r\ndata: [DONE]\n\n  '


async def serve(responses, *, piece=None, close_after=None):
    """A server answering each request on a connection with the next canned response. A
    response given as a list is written part by part, a float in it being a pause (seconds)."""
    seen = {"conns": 0, "requests": []}

    async def handle(reader, writer):
        seen["conns"] += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")]
                body = await reader.readexactly(length[0]) if length else b""
                seen["requests"].append((head.split(b"\r\n")[0], body))
                data = responses[len(seen["requests"]) - 1]
                if isinstance(data, list):
                    for part in data:
                        if isinstance(part, float):
                            await asyncio.sleep(part)
                        else:
                            writer.write(part)
                            await writer.drain()
                    data = b""
                step = piece or len(data) or 1
                for i in range(0, len(data), step):
                    writer.write(data[i : i + step])
                    await writer.drain()
                    if piece:
                        await asyncio.sleep(0)
                served += 1
                if close_after and served >= close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen


@pytest.mark.parametrize("piece", [None, 1, 7])
async def test_chunked_body_any_split(piece):
    server, url, seen = await serve([CHUNKED, CHUNKED], piece=piece)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        for _ in range(2):
            async with client.stream("POST", url + "/generate?x=1", content=b'{"k": 2}') as resp:
                assert resp.status_code == 200 and resp.headers["content-type"] == "text/event-stream"
                got = b"".join([p async for p in resp.aiter_raw()])
            assert got == BODY
    server.close()
    assert seen["conns"] == 1  # kept alive and reused
    assert seen["requests"][0] == (b"POST /generate?x=1 HTTP/1.1", b'{"k": 2}')


async def test_content_length_and_json():
    payload = b'{"data": [{"id": "m"}]}'
    resp_bytes = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload)
    server, url, seen = await serve([resp_bytes, resp_bytes], piece=5)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        r1 = await client.get(url + "/v1/models")
        r2 = await client.get(url + "/v1/models")
    server.close()
    assert r1.json() == r2.json() == {"data": [{"id": "m"}]}
    assert seen["conns"] == 1


async def test_stale_keepalive_is_retried_on_a_fresh_connection():
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    server, url, seen = await serve([ok, ok], close_after=1)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        assert (await client.get(url)).text == "ok"
        await asyncio.sleep(0.05)  # the server has closed the idle connection by now
        assert (await client.get(url)).text == "ok"
    server.close()
    assert seen["conns"] == 2


async def test_truncated_body_and_refused_connection():
    cut = CHUNKED[: len(CHUNKED) - 30]
    server, url, _ = await serve([cut], close_after=1)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            async with client.stream("GET", url) as resp:
                async for _ in resp.aiter_raw():
                    pass
        with pytest.raises(httpx.ConnectError):
            await client.get("http://127.0.0.1:1/")
    server.close()


def test_client_pool_fits_the_concurrency():
    # httpx ignores AsyncClient(limits=...) once a transport is given: the transport
    # must carry them, or https above 100 streams queues inside TTFT
    from tuiapp.bench.http_client import make_client
    from tuiapp.bench.settings import Timeouts

    client = make_client(Timeouts(), api_key=None, concurrency=300)
    transport = client._transport
    assert transport._max_idle >= 300
    assert transport.routed._by_proxy == {}  # no SSL context until an https URL needs one
    https = transport.routed._transport(None)
    assert https._pool._max_connections >= 300
    assert https._pool._max_keepalive_connections >= 300


async def test_bench_post_is_written_straight_and_keeps_the_connection():
    """A benchmark POST skips httpx's request building: the client's headers once per URL,
    the length per request, one connection kept across requests; https is httpx's."""
    from tuiapp.bench.http_client import make_client
    from tuiapp.bench.settings import Timeouts

    server, url, seen = await serve([CHUNKED, CHUNKED])
    async with make_client(Timeouts(), api_key="k1", concurrency=1) as client:
        head = client.lean.post_head(httpx.URL(url + "/generate?x=1"), client.headers)
        lines = head.split(b"\r\n")
        assert lines[0] == b"POST /generate?x=1 HTTP/1.1"
        names = [ln.split(b":")[0].lower() for ln in lines[1:] if ln]
        assert b"authorization" in names and b"host" in names
        assert b"content-length" not in names and b"connection" not in names
        for body in (b'{"k": 2}', b'{"k": 33}'):
            resp, sent_s = await client.open_post(url + "/generate?x=1", body)
            try:
                assert resp.status_code == 200 and sent_s is not None
                got = b"".join([p async for p in resp.aiter_raw()])
            finally:
                await resp.aclose()
            assert got == BODY
        assert client.lean.post_head(httpx.URL("https://example.invalid/generate"), client.headers) is None
    server.close()
    assert seen["conns"] == 1
    assert seen["requests"] == [(b"POST /generate?x=1 HTTP/1.1", b'{"k": 2}'),
                                (b"POST /generate?x=1 HTTP/1.1", b'{"k": 33}')]

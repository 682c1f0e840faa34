"""One client per server: no SSL context for plain http, one shared context for https."""

from __future__ import annotations

import ssl

import httpx
import pytest

from tuiapp.common import http_clients as clients
from tuiapp.common.http_clients import ServerClient, verify_for
from tuiapp.sim.process import SimProcess


def test_plain_http_builds_no_verifying_context(monkeypatch):
    from tuiapp.common import net_config

    built = []
    monkeypatch.setattr(net_config, "ssl_context", lambda *a: built.append(a))
    assert verify_for("http://127.0.0.1:30000") is False
    clients.async_client("http://127.0.0.1:30000")
    with clients.sync_client("http://127.0.0.1:1", timeout=0.5) as client, pytest.raises(httpx.ConnectError):
        client.get("http://127.0.0.1:1/")
    assert built == []


def test_https_shares_one_context():
    a, b = verify_for("https://a.example"), verify_for("HTTPS://b.example")
    assert isinstance(a, ssl.SSLContext) and a is b
    assert a.verify_mode == ssl.CERT_REQUIRED


@pytest.fixture(scope="module")
def sim():
    with SimProcess(["--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--sim-gpus", "8", "--enable-metrics"], speed=100) as proc:
        proc.wait_ready(30)
        yield proc


async def test_one_client_serves_info_metrics_and_gpus(sim):
    """Info fetch, metrics poller and GPU backend of a session all go through its ServerClient."""
    import asyncio

    from tuiapp.server.info import fetch_server_info
    from tuiapp.server.metrics_poll import run_metrics_poller
    from tuiapp.telemetry.sim_backend import SimBackend

    http = ServerClient(sim.url, api_key="k-secret")
    sent: list[httpx.Request] = []
    aio = http.aio
    aio.event_hooks["request"].append(lambda req: _keep(sent, req))
    info = await fetch_server_info(sim.url, client=aio)
    assert info.tp_size == 8
    events: list = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_metrics_poller(events.append, sim.url, client=aio, interval_s=0.05, stop=stop))
    await asyncio.sleep(0.3)
    stop.set()
    await task
    assert any(e.kind == "server_stats" for e in events)
    backend = SimBackend(sim.url, 8, client=http.sync)
    samples = await asyncio.to_thread(backend.sample)  # from a thread, as the sampler calls it
    assert [e.index for e in samples if e.kind == "gpu"] == list(range(8))
    assert backend.reachable
    backend.close()  # shared: the backend must leave it open
    assert not http.sync.is_closed
    with pytest.raises(RuntimeError):
        http.sync.get(sim.url + "/sim/gpus", timeout=1)  # on the loop itself it would hang
    assert {r.url.path for r in sent} >= {"/model_info", "/server_info", "/metrics", "/sim/gpus"}
    assert all(r.headers["authorization"] == "Bearer k-secret" for r in sent)
    await http.aclose()
    assert aio.is_closed


async def _keep(sent: list, request: httpx.Request) -> None:
    sent.append(request)


async def test_bridge_after_the_session_reads_as_unreachable(sim):
    """A sample in flight when the session closes gets an HTTP error (n/a readings), not a hang."""
    import asyncio

    from tuiapp.telemetry.sim_backend import SimBackend

    http = ServerClient(sim.url)
    backend = SimBackend(sim.url, 8, client=http.sync)
    await http.aclose()
    samples = await asyncio.to_thread(backend.sample)
    assert not backend.reachable
    assert all(e.mem_used_bytes is None for e in samples if e.kind == "gpu")


@pytest.fixture
def recorder():
    """A plain HTTP server that records each request's path and headers; /slow never answers."""
    import http.server
    import threading

    seen: list[tuple[str, dict]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append((self.path, dict(self.headers)))
            if self.path == "/slow":
                threading.Event().wait(2)
                return
            body = b'{"ok": true}' if self.path == "/ok" else b"no"
            self.send_response(200 if self.path == "/ok" else 404)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


async def test_poll_gets_skip_httpx_per_request_steps_but_keep_headers_status_and_timeouts(recorder, monkeypatch):
    url, seen = recorder
    client = clients.async_client(url, api_key="k-poll")
    assert isinstance(client, clients.PollClient)
    built = []
    build = httpx.AsyncClient.build_request
    monkeypatch.setattr(httpx.AsyncClient, "build_request", lambda self, *a, **k: built.append(a) or build(self, *a, **k))
    for _ in range(3):
        resp = await client.get(url + "/ok", timeout=1.0)
        assert resp.status_code == 200 and resp.json() == {"ok": True}
        resp.raise_for_status()
    assert len(built) == 1  # the request is built once per URL and timeout, then re-sent
    assert [path for path, _ in seen] == ["/ok"] * 3
    assert all(headers.get("authorization") == "Bearer k-poll" for _, headers in seen)
    missing = await client.get(url + "/missing", timeout=1.0)
    with pytest.raises(httpx.HTTPStatusError):
        missing.raise_for_status()
    with pytest.raises(httpx.ReadTimeout):
        await client.get(url + "/slow", timeout=httpx.Timeout(0.3))
    await client.aclose()
    with pytest.raises(RuntimeError):
        await client.get(url + "/ok", timeout=1.0)  # closed, as httpx says

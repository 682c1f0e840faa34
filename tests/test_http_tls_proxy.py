"""TLS trust (system store, --ca-cert, --insecure) and proxies (environment, --proxy, no_proxy,
loopback direct) against a local self-signed https server and a local forwarding proxy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from net_servers import FAKE_HOST, ForwardProxy, json_server, make_cert

from tuiapp.cli import main
from tuiapp.common import net_config
from tuiapp.common.errors import UsageError
from tuiapp.common.http_clients import async_client, sync_client
from tuiapp.common.net_config import NetOptions


@pytest.fixture(autouse=True)
def _defaults():
    net_config.reset()
    yield
    net_config.reset()


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def https_server(cert):
    with json_server(cert) as server:
        yield server


@pytest.fixture(scope="module")
def http_server():
    with json_server() as server:
        yield server


@pytest.fixture
def proxy():
    p = ForwardProxy({FAKE_HOST: "127.0.0.1"})
    yield p
    p.close()


def _port(server) -> int:
    return server.server_address[1]


async def _get(url: str, **kw) -> httpx.Response:
    async with async_client(url, **kw) as client:
        return await client.get(url)


async def test_self_signed_is_refused_by_default_with_host_and_cause(https_server):
    url = f"https://127.0.0.1:{_port(https_server)}/x"
    with pytest.raises(httpx.ConnectError) as info:
        await _get(url)
    text = str(info.value)
    assert text.startswith(f"127.0.0.1:{_port(https_server)}: certificate not trusted: ")
    assert "self-signed" in text and "--ca-cert" in text and "Operation not permitted" not in text


async def test_ca_cert_and_insecure_are_trusted(https_server, cert):
    url = f"https://127.0.0.1:{_port(https_server)}/x"
    net_config.configure(NetOptions(ca_cert=str(cert[0])))
    assert (await _get(url)).json()["path"] == "/x"
    with sync_client(url) as client:  # the GPU exporters' client trusts it too
        assert client.get(url).json()["path"] == "/x"
    net_config.configure(NetOptions(insecure=True))
    assert (await _get(url)).json()["path"] == "/x"


async def test_a_name_the_certificate_lacks_is_a_hostname_mismatch(https_server, cert):
    net_config.configure(NetOptions(ca_cert=str(cert[0])))
    with pytest.raises(httpx.ConnectError, match=r"^localhost:\d+: certificate not trusted: Hostname mismatch"):
        await _get(f"https://localhost:{_port(https_server)}/x")


async def test_https_to_a_plain_http_server_says_so(http_server):
    with pytest.raises(httpx.ConnectError, match=r"TLS handshake failed: .*\(is it plain http\?\)"):
        await _get(f"https://127.0.0.1:{_port(http_server)}/x")


def test_attach_untrusted_and_mistyped_hosts_are_one_line(https_server, capsys):
    url = f"https://127.0.0.1:{_port(https_server)}"
    assert main(["attach", url, "--headless", "--runs", "1", "--connect-timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tuiapp attach: error: cannot connect to {url}: certificate not trusted: ")
    assert main(["attach", "https://no-such-host.invalid:8443", "--headless", "--runs", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unknown error" not in err
    assert err.startswith("tuiapp attach: error: cannot connect to https://no-such-host.invalid:8443: "
                          "name resolution failed: ")


@pytest.mark.parametrize(("argv", "words"), [
    (["--ca-cert", "/no/such.pem"], "--ca-cert /no/such.pem: no such file"),
    (["--ca-cert", "/"], "--ca-cert /: is a directory"),
    (["--ca-cert", "pyproject.toml"], "--ca-cert pyproject.toml: not a PEM certificate file"),
    (["--insecure", "--ca-cert", "pyproject.toml"], "--ca-cert and --insecure are exclusive"),
    (["--proxy", "ftp://p:21"], "--proxy 'ftp://p:21': not a proxy URL"),
])
def test_bad_tls_and_proxy_options_are_usage_errors(argv, words, capsys):
    assert main(["attach", "http://127.0.0.1:1", "--headless", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_gpus_takes_the_options_too(capsys):
    assert main(["gpus", "--gpu-source", "http://127.0.0.1:1", "--ca-cert", "/no/such.pem"]) == 2
    assert "--ca-cert /no/such.pem: no such file" in capsys.readouterr().err


async def test_environment_proxy_carries_http_and_https(proxy, http_server, https_server, cert):
    env = {"http_proxy": proxy.url, "HTTPS_PROXY": proxy.url}
    net_config.configure(NetOptions(ca_cert=str(cert[0]), env=env))
    # served.test resolves only at the proxy: an answer proves the route
    plain = f"http://{FAKE_HOST}:{_port(http_server)}/plain"
    assert (await _get(plain)).json() == {"path": "/plain", "host": f"{FAKE_HOST}:{_port(http_server)}"}
    secure = f"https://{FAKE_HOST}:{_port(https_server)}/secure"
    assert (await _get(secure)).json()["path"] == "/secure"
    with sync_client(plain) as client:
        assert client.get(plain).json()["path"] == "/plain"
    assert proxy.seen == [f"GET {plain}", f"CONNECT {FAKE_HOST}:{_port(https_server)}", f"GET {plain}"]


async def test_all_proxy_and_explicit_proxy(proxy, http_server):
    plain = f"http://{FAKE_HOST}:{_port(http_server)}/all"
    net_config.configure(NetOptions(env={"ALL_PROXY": proxy.url}))
    assert (await _get(plain)).status_code == 200
    # --proxy wins over the environment's (a dead one here)
    net_config.configure(NetOptions(proxy=proxy.url, env={"http_proxy": "http://127.0.0.1:1"}))
    assert (await _get(plain)).status_code == 200
    assert proxy.seen == [f"GET {plain}"] * 2


async def test_no_proxy_and_loopback_go_direct(proxy, http_server):
    port = _port(http_server)
    net_config.configure(NetOptions(env={"http_proxy": proxy.url, "no_proxy": "localhost,.test"}))
    with pytest.raises(httpx.ConnectError, match=rf"^{FAKE_HOST}:{port}: name resolution failed"):
        await _get(f"http://{FAKE_HOST}:{port}/x")
    net_config.configure(NetOptions(proxy=proxy.url, env={"NO_PROXY": "*"}))
    with pytest.raises(httpx.ConnectError, match="name resolution failed"):
        await _get(f"http://{FAKE_HOST}:{port}/x")
    # loopback is never proxied, so it stays on the lean transport
    net_config.configure(NetOptions(proxy=proxy.url))
    local = f"http://127.0.0.1:{port}/local"
    async with async_client(local) as client:
        assert client._transport.is_lean(httpx.URL(local))
        assert not client._transport.is_lean(httpx.URL(f"http://{FAKE_HOST}:{port}/"))
        assert (await client.get(local)).json()["path"] == "/local"
    assert proxy.seen == []


async def test_a_dead_proxy_is_named(http_server):
    net_config.configure(NetOptions(proxy="http://127.0.0.1:1"))
    with pytest.raises(httpx.ConnectError, match=rf"^{FAKE_HOST}:80 via proxy 127.0.0.1:1: Connection refused"):
        await _get(f"http://{FAKE_HOST}/x")


def test_environment_proxy_read_from_os_environ(monkeypatch, proxy, http_server):
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    net_config.reset()
    plain = f"http://{FAKE_HOST}:{_port(http_server)}/env"
    with sync_client(plain) as client:
        assert client.get(plain).status_code == 200
    assert proxy.seen == [f"GET {plain}"]


def test_socks_without_socksio_is_a_usage_error():
    try:
        import socksio  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="socksio"):
            net_config.configure(NetOptions(env={"all_proxy": "socks5://127.0.0.1:1080"}))
    else:
        net_config.configure(NetOptions(env={"all_proxy": "socks5://127.0.0.1:1080"}))


def test_attach_through_an_environment_proxy(proxy, tmp_path):
    """A server reachable only through a proxy is attached and benchmarked: the whole session
    (server info, benchmark streams, metrics polls) goes through it."""
    server = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", "2",
                               "--tokens-per-chunk", "3"], stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().split()[-1].rsplit(":", 1)[1]
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env["http_proxy"] = proxy.url
        summary = tmp_path / "s.json"
        r = subprocess.run([sys.executable, "-m", "tuiapp", "attach", f"http://{FAKE_HOST}:{port}", "--headless",
                            "--runs", "2", "--max-new-tokens", "16", "--telemetry", "off", "--summary", str(summary)],
                           capture_output=True, text=True, timeout=60, env=env)
    finally:
        server.terminate()
        server.wait(5)
    assert r.returncode == 0, r.stderr
    runs = json.loads(summary.read_text())["runs"]
    assert len(runs) == 2 and all(run["errors"] == 0 and run["decode_tok_s"] for run in runs)
    paths = {line.split(" ", 1)[1].split(f":{port}", 1)[1] for line in proxy.seen}
    # the proxy sees a connection's first request: the readiness check, then the benchmark's
    assert {"/health", "/generate"} <= paths, paths

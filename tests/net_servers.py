"""Local servers for the TLS and proxy tests: a self-signed https server and a small forwarding
proxy (absolute-form GET and CONNECT) that alone knows the test's made-up host names."""

from __future__ import annotations

import contextlib
import json
import selectors
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

FAKE_HOST = "served.test"  # resolvable only by the proxy


def make_cert(tmp: Path, names: tuple[str, ...] = (FAKE_HOST,), ips: tuple[str, ...] = ("127.0.0.1",)) -> tuple[Path, Path]:
    """A self-signed certificate (cert.pem, key.pem) for ``names`` and ``ips``."""
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    try:
        _make_cert_cryptography(cert, key, names, ips)
        return cert, key
    except ImportError:
        pass
    if shutil.which("openssl") is None:
        pytest.skip("neither the cryptography package nor openssl is installed to make a test certificate")
    san = ",".join([f"DNS:{n}" for n in names] + [f"IP:{i}" for i in ips])
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "2", "-subj", f"/CN={names[0]}",
                    "-addext", f"subjectAltName={san}"], check=True, capture_output=True, timeout=60)
    return cert, key


def _make_cert_cryptography(cert: Path, key: Path, names, ips) -> None:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.timezone.utc)
    san = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    built = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(pkey.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.SubjectAlternativeName(san), critical=False)
             .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
             .sign(pkey, hashes.SHA256()))
    cert.write_bytes(built.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path  # a proxy's absolute form too
        self.server.paths.append(path)  # type: ignore[attr-defined]
        body = json.dumps({"path": path, "host": self.headers.get("host")}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def json_server(cert: tuple[Path, Path] | None = None) -> Iterator[ThreadingHTTPServer]:
    """An http (or, given ``cert``, https) server on 127.0.0.1 answering every GET with JSON."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.paths = []  # type: ignore[attr-defined]
    if cert is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class ForwardProxy:
    """An HTTP proxy on 127.0.0.1: absolute-form requests and CONNECT tunnels, each to the
    address ``names`` gives for the host (else the host itself); ``seen`` holds each
    request line it took."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.seen: list[str] = []
        self._listen = socket.create_server(("127.0.0.1", 0))
        self.port = self._listen.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listen.accept()
            except OSError:
                return
            self._socks.append(client)
            t = threading.Thread(target=self._serve, args=(client,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            head = b""
            while b"\r\n\r\n" not in head:
                got = client.recv(65536)
                if not got:
                    return
                head += got
            line, rest = head.split(b"\r\n", 1)
            method, target, version = line.decode().split(" ")
            self.seen.append(f"{method} {target}")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((self.names.get(host, host), int(port)), timeout=5)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                extra = rest.split(b"\r\n\r\n", 1)[1]
            else:
                url = urlsplit(target)
                upstream = socket.create_connection(
                    (self.names.get(url.hostname, url.hostname), url.port or 80), timeout=5)
                extra = f"{method} {url.path or '/'} {version}\r\n".encode() + rest
            self._socks.append(upstream)
            if extra:
                upstream.sendall(extra)
            self._pump(client, upstream)

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while True:
                for key, _ in sel.select(5):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
        finally:
            sel.close()
            a.close()
            b.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listen.shutdown(socket.SHUT_RDWR)  # wakes the accept; a close alone does not
        self._listen.close()
        for s in self._socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self._accepting.join(5)
        for t in self._threads:
            t.join(5)

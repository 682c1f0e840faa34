import socket
import sys

import pytest

from tuiapp.server.command import api_key_from, build_server_command, server_url
from tuiapp.server.ports import free_port, port_in_use


def test_default_and_flag_only_commands_use_sglang_launch_server():
    assert build_server_command(None) == [sys.executable, "-m", "sglang.launch_server"]
    assert build_server_command([]) == [sys.executable, "-m", "sglang.launch_server"]
    assert build_server_command(["--model-path", "m"]) == [sys.executable, "-m", "sglang.launch_server",
                                                            "--model-path", "m"]
    assert build_server_command(["sglang", "serve", "--tp", "8"]) == ["sglang", "serve", "--tp", "8"]


def test_server_url_reads_host_and_port_like_argparse():
    assert server_url(["sglang", "serve"]) == "http://127.0.0.1:30000"
    assert server_url(["x", "--port", "8000"]) == "http://127.0.0.1:8000"
    assert server_url(["x", "--port=8001", "--host=0.0.0.0"]) == "http://127.0.0.1:8001"
    assert server_url(["x", "--host", "::", "--port", "9"]) == "http://[::1]:9"
    assert server_url(["x", "--host", "10.0.0.2", "--port", "1", "--port", "2"]) == "http://10.0.0.2:2"
    with pytest.raises(ValueError, match="not a number"):
        server_url(["x", "--port", "eighty"])


def test_api_key_from_argv():
    assert api_key_from(["x", "--api-key", "k1"]) == "k1"
    assert api_key_from(["x", "--api-key=k2"]) == "k2"
    assert api_key_from(["x", "--admin-api-key", "a"]) is None


def test_port_in_use_sees_a_listener_and_not_a_free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
        assert port_in_use("0.0.0.0", port)
    assert not port_in_use("127.0.0.1", free_port())

"""Fixtures several test files share."""

from __future__ import annotations

import pytest

from tuiapp.sim.testserver import FakeSGLang


@pytest.fixture
async def fake_sglang():
    """Start fake SGLang servers with the pacing a test asks for; each is stopped after it."""
    started: list[FakeSGLang] = []

    async def start(**kwargs) -> FakeSGLang:
        srv = FakeSGLang(**kwargs)
        await srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        await srv.stop()

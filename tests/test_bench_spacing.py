"""How the benchmark spaces its stream reads: at once to the first token, spaced, one read aimed at the end."""

from __future__ import annotations

from types import SimpleNamespace

from tuiapp.bench.client import _Spacing
from tuiapp.common.lean_transport import STREAM_WAKE_S

ITL_S = 0.01
N = int(3 * STREAM_WAKE_S / ITL_S)  # a stream three spacings long


def _spacing(expect: int | None) -> tuple[_Spacing, list]:
    asked: list = []
    resp = SimpleNamespace(extensions={"stream_wake": asked.append})
    return _Spacing(resp, expect), asked


def _piece(sp: _Spacing, tokens: int) -> None:
    """One read that brought chunks up to ``tokens`` (one token per chunk, ITL_S apart)."""
    if sp.tokens == 0:
        sp.first_tokens, sp.first_s = 1, 0.0
    sp.tokens = tokens
    sp.piece((tokens - 1) * ITL_S)


def test_at_once_then_spaced_then_aimed_then_every_byte() -> None:
    sp, asked = _spacing(N)
    assert asked == [0.0]  # before the first token: every byte at once
    _piece(sp, 1)
    _piece(sp, 2)
    assert asked == [0.0]  # at once until a piece after the second token gives the pace
    for tokens in range(3, N // 2, 25):
        _piece(sp, tokens)
    assert asked == [0.0, None]  # nothing asked while the end is far
    due_at = N - int(STREAM_WAKE_S / ITL_S) + 2  # less than one spacing before the end
    _piece(sp, due_at)
    aimed = asked[-1]
    assert len(asked) == 3 and 0 < aimed < STREAM_WAKE_S
    assert abs(aimed - (N - due_at - 1.5) * ITL_S) < 1e-9  # just before the end it expects
    _piece(sp, N - 1)  # the aimed read came a token early: every byte from here
    assert asked[-1] == 0.0
    _piece(sp, N)
    assert asked[-1] == 0.0 and len(asked) == 4


def test_a_slow_first_gap_does_not_push_the_aim_past_the_end() -> None:
    """In a batch the gap after the first token holds other requests' prefills: a pace read
    from it would put a short stream's end a spacing away, unseen until the next tick."""
    sp, asked = _spacing(40)
    sp.first_tokens, sp.first_s, sp.tokens = 1, 0.0, 1
    sp.piece(0.0)
    sp.tokens = 2
    sp.piece(0.3)  # 300 ms behind others' prefills, then 10 ms a token
    sp.tokens = 3
    sp.piece(0.31)
    aimed = asked[-1]
    assert aimed is not None and 0 < aimed < STREAM_WAKE_S
    assert abs(aimed - (40 - 3 - 1.5) * 0.01) < 1e-9


def test_without_an_expected_length_it_stays_spaced() -> None:
    sp, asked = _spacing(None)
    for tokens in (1, 30, 200, 500):
        _piece(sp, tokens)
    assert asked == [0.0, None]


def test_no_transport_hook_no_calls() -> None:
    sp = _Spacing(SimpleNamespace(extensions={}), 10)
    sp.tokens = 5
    sp.piece(0.04)  # a transport without spaced reads: nothing to ask

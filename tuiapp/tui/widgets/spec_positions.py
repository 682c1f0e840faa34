"""Speculative acceptance per draft position, and the accept-length distribution, live.

From the histograms SGLang returns per request (tuiapp.common.acceptance), pooled over the
current trial's requests: one bar per draft position (accepted / steps whose budget reached
it; the conditional rate beside it), then the share of verify steps by accept length. A
position that some steps could not reach (adaptive steps) is marked with how many saw it.
Without speculation the panel says so rather than showing zeros.
"""

from __future__ import annotations

from rich.text import Text

from tuiapp.common import acceptance
from tuiapp.common.numfmt import num
from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel

NO_SPEC = "no speculative decoding"
NO_HISTOGRAM = "no per-request histogram from this server (spec_accept_histogram, SGLang #18332)"
WAITING = "waiting for the first finished request"


class SpecPositionsPanel(Panel):
    """The store's ``spec_tally`` (a trial's pooled histograms) as bars per draft position."""

    panel_key = "spec_positions"
    min_interval_s = 0.75
    DEFAULT_CSS = """
    SpecPositionsPanel { width: 1fr; padding: 0 0 0 1; display: none; }
    SpecPositionsPanel.-shown { display: block; }
    """

    def on_mount(self) -> None:
        self.border_title = "accept / position"

    def sync_shown(self) -> None:
        """Shown while the server speculates or histograms came (the dashboard calls this each
        frame; a class of the panel, restyled alone). Without speculation it folds with the
        acceptance panel, the header says "spec off" and the row is the others'."""
        shown = bool(self.store.speculating) or self.store.spec_tally.requests > 0
        if self.has_class("-shown") != shown:
            self.set_class(shown, "-shown")

    def _line(self, *parts: tuple[str, str]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for content, tone in parts:
            text.append(content, self.tone(tone))
        return text

    def render(self) -> Text:
        return Text("\n", no_wrap=True).join(self.lines(self.size.width, max(1, self.size.height)))

    def lines(self, width: int, height: int) -> list[Text]:
        s = self.store
        tally: acceptance.Tally = s.spec_tally
        if not tally.requests:
            if s.speculating is False:
                return [self._line((NO_SPEC, "muted"))]
            # a speculating server whose requests finished without a histogram: an older SGLang
            why = NO_HISTOGRAM if s.spec_requests_without_histogram else WAITING
            return [self._line((fmt.fit(why, width), "muted"))]
        positions = tally.positions()
        steps = tally.steps
        out: list[Text] = []
        room = height - 2  # the length distribution and the summary line
        if room >= len(positions):
            partial = any(p.observed_steps < steps for p in positions)
            bar_w = max(4, width - 17 - (9 if partial else 0))
            for p in positions:
                filled, empty = fmt.bar(p.rate, bar_w)
                seen = p.observed_steps / steps if steps else 0.0
                mark = f" {seen:.0%} seen" if p.observed_steps < steps else ""
                out.append(self._line((f"p{p.position} ", "label"), (filled, "spark"), (empty, "muted"),
                                      (f" {num(_pct(p.rate), '.0f', '%'):>4}", "value"),
                                      (f" |{num(_pct(p.conditional), '.0f', '%')}", "muted"), (mark, "warn")))
        else:  # a short panel: the positions on one line, `p1-3 81/66/52%`
            text = "/".join(num(_pct(p.rate), '.0f') for p in positions) + "%"
            out.append(self._line((f"p1-{len(positions)} ", "label"), (fmt.fit(text, max(1, width - 5)), "value")))
        shares = acceptance.length_shares(tally.accepted)
        dist = "/".join(f"{share * 100:.0f}" for share in shares) + "%"
        out.append(self._line((f"len 1-{len(shares)} ", "label"), (fmt.fit(dist, max(1, width - 8)), "value")))
        budget = s.server_load.spec_num_steps if s.server_load is not None else None
        summary = [("mean ", "label"), (num(acceptance.mean_length(tally.accepted), '.2f'), "value"),
                   (" tok/step", "muted"), (f"  {steps} steps", "muted")]
        if budget is not None:
            summary += [("  budget ", "label"), (str(budget), "value")]
        out.append(self._line(*summary))
        return out[:height] if len(out) > height else out


def _pct(value: float | None) -> float | None:
    return value * 100 if value is not None else None

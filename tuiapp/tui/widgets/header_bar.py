"""Top line(s): what is running, its state, uptime, SGLang version and speculative config."""

from __future__ import annotations

from rich.text import Text

from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel

_STATE_TONE = {
    "starting": "warn", "ready": "ok", "running": "ok", "failed": "error",
    "stopping": "warn", "stopped": "muted", "unreachable": "error",
}


def spec_config(info) -> str:
    if info is None:
        return "spec n/a"
    if not info.speculative_algorithm:
        return "spec off"
    parts = [info.speculative_algorithm]
    for label, value in (("steps", info.speculative_num_steps), ("topk", info.speculative_eagle_topk),
                         ("draft", info.speculative_num_draft_tokens)):
        if value is not None:
            parts.append(f"{label} {value}")
    return " ".join(parts)


class HeaderBar(Panel):
    panel_key = "header"
    compare_text = False  # bumped when the uptime shown moves a second: the text always changes

    def __init__(self, store, title: str, **kwargs) -> None:
        super().__init__(store, **kwargs)
        self.title = title

    def render(self) -> Text:
        outcome = self.store.outcome(max(1, self.size.width - 7))  # 7: the badge and a space
        if outcome is not None:
            return self._finished(outcome)
        return self._live()

    def _finished(self, outcome: str) -> Text:
        """The end state: what the campaign found, not the last trial's exception."""
        s = self.store
        first = Text(no_wrap=True, overflow="ellipsis")
        first.append(" DONE ", self.tone("ok") + self.tone("badge"))
        first.append(" ")
        first.append(outcome, self.tone("value"))
        second = Text(no_wrap=True, overflow="ellipsis")
        total_s = s.now_t_s - s.first_t_s if s.now_t_s is not None and s.first_t_s is not None else None
        second.append(f"{len(s.trials)} trial{'s' if len(s.trials) != 1 else ''} in ", self.tone("label"))
        second.append(fmt.clock(total_s), self.tone("value"))
        second.append("  ledger: enter on a row for its details", self.tone("muted"))
        if self.size.height >= 2:
            return Text("\n").join([first, second])
        return first

    def _live(self) -> Text:
        s = self.store
        state = s.server_state.state if s.server_state else None
        first = Text()
        badge = f" {(state or 'no server').upper()} "
        first.append(badge, self.tone(_STATE_TONE.get(state or "", "muted")) + self.tone("badge"))
        first.append(" ")
        trial = s.trials.get(s.current_trial) if s.current_trial else None
        if trial is not None:
            first.append(f"trial {trial.index + 1}/{trial.total} ", self.tone("label"))
            first.append(trial.name, self.tone("value"))
            if trial.phase != "running":
                first.append(f" ({trial.phase})", self.tone("warn" if trial.phase != "done" else "muted"))
        else:
            first.append(self.title, self.tone("value"))
        first.append("  up ", self.tone("label"))
        first.append(fmt.clock(s.uptime_s), self.tone("value"))
        if s.bench_state is not None and s.bench_state.state != "running":
            first.append("  bench ", self.tone("label"))
            tone = "warn" if s.bench_state.state in ("paused", "waiting_server") else "value"
            first.append(s.bench_state.state.replace("_", " "), self.tone(tone))
        if s.server_state is not None and s.server_state.state in ("failed", "unreachable") and s.server_state.message:
            first.append(f"  {s.server_state.message}", self.tone("error"))

        info = s.server_info
        second = Text()
        if info is not None and info.engine != "sglang":
            second.append(f"{info.engine}-compatible server", self.tone("label"))
        else:
            second.append("sglang ", self.tone("label"))
            second.append(info.version or fmt.NA if info else fmt.NA, self.tone("value"))
        if info is not None and self.size.height >= 2:
            if info.model_path:
                second.append("  model ", self.tone("label"))
                second.append(info.model_path.rstrip("/").rsplit("/", 1)[-1], self.tone("value"))
            if info.tp_size is not None:
                second.append(f"  tp {info.tp_size}", self.tone("value"))
            if info.ep_size not in (None, 1):
                second.append(f"  ep {info.ep_size}", self.tone("value"))
        second.append("  ")
        second.append(spec_config(info), self.tone("value"))

        if self.size.height >= 2:
            return Text("\n").join([first, second])
        # One row (80x24): state, name, uptime, version and spec config, cut at the edge.
        first.append("  ")
        first.append_text(second)
        first.truncate(max(1, self.size.width), overflow="ellipsis")
        return first

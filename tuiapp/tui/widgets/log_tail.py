"""The newest server log records that fit, optionally only errors; a traceback shows its first line."""

from __future__ import annotations

import re

from rich.text import Text
from textual.reactive import reactive

from tuiapp.events import LogLine
from tuiapp.tui import fmt
from tuiapp.tui.widgets.panel import Panel

# Access-log lines of our own polling (uvicorn: `INFO:  127.0.0.1:39906 - "GET /server_info
# HTTP/1.1" 200 OK`): the server info every 2 s, /metrics every second, /health while starting,
# the simulator's GPUs, the per-rank loads (/v1/loads, older /get_load) every second while
# requests run. They drown the server's own lines; hidden by default (key a).
_POLLING = re.compile(r'"(?:GET|HEAD) /(?:get_)?(?:server_info|model_info|metrics|health(?:_generate)?|v1/models|'
                      r'v1/loads|load|sim/gpus)'
                      r'(?:[?/ ][^"]*)?" \d{3}')


def is_polling(line: LogLine) -> bool:
    """A request line of our own pollers, not of the benchmark or the server's work."""
    return line.level == "info" and '"GET /' in line.text and _POLLING.search(line.text) is not None


def rank_tag(line: LogLine) -> str:
    parts = [f"{name}{v}" for name, v in (("TP", line.tp_rank), ("DP", line.dp_rank), ("EP", line.ep_rank))
             if v is not None]
    return f"[{' '.join(parts)}] " if parts else ""


def log_line_text(line: LogLine, rel_s: float, tones: dict[str, object], *, full: bool = False) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{fmt.clock(rel_s)} ", tones["muted"])
    text.append(rank_tag(line), tones["label"])
    tone = tones["error"] if line.level == "error" else tones["warn"] if line.level == "warning" else tones["value"]
    lines = line.text.splitlines() or [""]
    if full:
        text.append("\n".join(lines), tone)
    else:
        text.append(lines[0], tone)
        if len(lines) > 1:
            text.append(f" (+{len(lines) - 1} lines)", tones["muted"])
    return text


class LogTail(Panel):
    panel_key = "log"
    min_interval_s = 0.5  # failures reach the alert list at once; the tail may lag a tick
    errors_only: reactive[bool] = reactive(False)
    hide_polling: reactive[bool] = reactive(True)
    _seen: dict[int, list] = {}  # id(line) -> [line, is polling, text's key, text]; see render

    def watch_errors_only(self) -> None:
        self.paint(force=True)

    def watch_hide_polling(self) -> None:
        self.paint(force=True)

    def paint(self, force: bool = False) -> None:
        polling = "a: show polling" if self.hide_polling else "a: hide polling"
        title = (f"log{' - errors only' if self.errors_only else ''} errors: {self.store.log_errors}"
                 f"  e: filter  {polling}")
        if title != self.border_title:
            self.border_title = title
        super().paint(force)

    def tones(self) -> dict[str, object]:
        return {name: self.tone(name) for name in ("muted", "label", "error", "warn", "value")}

    def render(self) -> Text:
        height = max(1, self.size.height)
        picked: list[LogLine] = []
        hide = self.hide_polling
        errors_only = self.errors_only
        # A repaint shows mostly the lines of the last one, moved up: each line's text (and
        # whether it is our polling, a regex) is kept from the previous render, keyed by the
        # line itself, and only the lines seen this time are kept for the next.
        seen, kept = self._seen, {}
        for line in reversed(self.store.log):
            entry = seen.get(id(line))
            if entry is None or entry[0] is not line:
                entry = [line, is_polling(line), None, None]
            kept[id(line)] = entry
            if (not errors_only or line.level != "info") and not (hide and entry[1]):
                picked.append(entry)
                if len(picked) == height:
                    break
        self._seen = kept
        if not picked:
            return Text("no errors logged" if errors_only else "no log lines yet", self.tone("muted"))
        tones = self.tones()
        key = (tuple(tones.values()), self.store.first_t_s)
        for entry in picked:
            if entry[2] != key:
                line = entry[0]
                entry[2], entry[3] = key, log_line_text(line, self.store.rel_s(line.t_s), tones)
        return Text("\n", no_wrap=True).join(entry[3] for entry in reversed(picked))

"""The latest Note (e.g. "telemetry off: no NVIDIA driver"), with how many came before it."""

from __future__ import annotations

from rich.text import Text

from tuiapp.tui import fmt
from tuiapp.tui.figures import point_note
from tuiapp.tui.widgets.panel import Panel

_TONE = {"info": "value", "warning": "warn", "error": "error"}


class NotesBar(Panel):
    panel_key = "notes"

    def paint(self, force: bool = False) -> None:
        shown = self._latest() is not None
        if self.display != shown:
            self.display = shown
        super().paint(force)

    def _latest(self):
        """The newest note the progress line does not already say (a sweep's "load point 3 of 6")."""
        return next((n for n in reversed(self.store.notes) if point_note(n.text) is None), None)

    def render(self) -> Text:
        notes = self.store.notes
        note = self._latest()
        if note is None:
            return Text()
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("note ", self.tone("label"))
        text.append(f"{fmt.clock(self.store.rel_s(note.t_s))} ", self.tone("muted"))
        if note.source and not note.text.startswith(f"{note.source}:"):
            text.append(f"{note.source}: ", self.tone("label"))
        text.append(note.text, self.tone(_TONE[note.level]))
        if len(notes) > 1:
            text.append(f"  (+{len(notes) - 1} earlier, see log screen)", self.tone("muted"))
        return text

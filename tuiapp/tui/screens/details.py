"""Modal detail screens: an alert with its traceback, a trial with its ledger row, a yes/no question."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tuiapp.common import startup_phases
from tuiapp.common.numfmt import gib, num
from tuiapp.events import Alert
from tuiapp.tui import fmt
from tuiapp.tui.store import DashboardStore, TrialRow
from tuiapp.tui.widgets.alert_list import ranks_label


class _DetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="detail"):
            yield Label(self.title_text, id="detail-title")
            with VerticalScroll(id="detail-scroll"):
                yield Static(self.body, id="detail-body")
            yield Label("esc/enter: close   ↑ ↓ pgup pgdn: scroll", id="detail-hint")

    def on_mount(self) -> None:
        self.query_one("#detail-scroll").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def alert_text(alert: Alert, store: DashboardStore) -> Text:
    body = Text()
    rows = (("kind", alert.alert_kind), ("severity", alert.severity), ("ranks", ranks_label(alert.ranks)),
            ("source", alert.source), ("time", fmt.clock(store.rel_s(alert.t_s))),
            ("log line", str(alert.first_line) if alert.first_line is not None else fmt.NA),
            ("count", str(alert.count)))
    cause = store.alert_by_id(alert.source, alert.caused_by) if alert.caused_by else None
    if cause is not None:  # a death: what it followed
        rows += (("after", f"{cause.alert_kind}: {cause.message.splitlines()[0] if cause.message else ''}"),)
    for label, value in rows:
        body.append(f"{label:<9}", "bold")
        body.append(f"{value}\n")
    if alert.repeats:  # where the copies it counted are (each rank's traceback)
        body.append(f"{'again':<9}", "bold")
        body.append(f"lines {', '.join(str(n) for n in alert.repeats)}\n")
    for line, message in alert.joined:  # its knock-ons and burst, told in the order they came
        body.append(f"{'then':<9}", "bold")
        body.append(f"line {line}: {message}\n")
    body.append("\n")
    body.append(alert.message + "\n\n", "bold")
    body.append(alert.traceback or "(no traceback recorded)")
    return body


class AlertScreen(_DetailScreen):
    def __init__(self, alert: Alert, store: DashboardStore) -> None:
        self.alert = alert
        super().__init__(f"{alert.severity.upper()} {alert.alert_kind}: ranks {ranks_label(alert.ranks)}",
                         alert_text(alert, store))


def _table(body: Text, header: list[str], rows: list[list[str]], indent: str = "  ") -> None:
    """Columns padded to their widest cell (plain text: copies out of a terminal as it reads)."""
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    body.append(indent + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n", "bold")
    for cells in rows:
        body.append(indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n")


def trial_text(row: TrialRow, store: DashboardStore) -> Text:
    """A trial's ledger row as a reader wants it: the result, its configuration against
    its base, per-GPU peak memory in GiB and its alerts as a list."""
    body = Text()
    r = row.result.row if row.result else {}
    body.append("phase    ", "bold")
    body.append(f"{row.phase}  {row.message}".rstrip() + "\n")
    if row.result is None:
        body.append("no ledger row yet\n")
    else:
        body.append("status   ", "bold")
        body.append(f"{row.result.status}")
        if r.get("dead_end"):
            body.append("  (dead end)", "bold")
        body.append("\n")
        if r.get("first_error"):
            body.append("error    ", "bold")
            body.append(f"{r['first_error']}\n")
        base = r.get("baseline")
        verdict = r.get("verdict") or fmt.NA
        if r.get("delta_pct") is not None and base:
            verdict += f": {r['delta_tok_s']:+.2f} tok/s ({r['delta_pct']:+.1f}%) vs {base}"
            if r.get("p_value") is not None:
                verdict += f", p={r['p_value']:.3g}"
        body.append("verdict  ", "bold")
        body.append(verdict + "\n\n")
        runs = r.get("runs_decode_tok_s") or []
        ci = r.get("ci95_decode_tok_s")
        mean = r.get("mean_decode_tok_s")
        decode = fmt.NA if mean is None else f"{mean:.2f} ± {num(r.get('sd_decode_tok_s'), '.2f')}" + (
            f" (n={len(runs)})" if runs else "")

        def gbs(value) -> str:
            return fmt.NA if value is None else f"{value / 1e9:.2f} GB/s"

        pcie = (f"mean {gbs(r.get('pcie_avg_bytes_s'))}, busiest GPU {gbs(r.get('pcie_peak_bytes_s'))}"
                if r.get("pcie_avg_bytes_s") is not None else fmt.NA)
        facts = [
            ["decode tok/s", decode],
            ["95% CI", f"{ci[0]:.2f}–{ci[1]:.2f}" if isinstance(ci, (list, tuple)) and len(ci) == 2 else fmt.NA],
            ["runs", ", ".join(f"{v:.1f}" for v in runs) or fmt.NA],
            ["output tok/s", num(r.get("mean_output_tok_s"), '.2f')],
            ["TTFT", fmt.ms(r.get("mean_ttft_s"))],
            ["accept length", num(r.get("accept_length"), '.2f')],
            ["PCIe tx+rx per GPU", pcie],
            ["start-up", num(r.get("startup_s"), '.1f', " s")],
            ["server's start-up", _server_startup(r.get("server_startup"))],
            ["duration", num(r.get("duration_s"), '.1f', " s")],
        ]
        # a trial that never served has no figures: say so once instead of a column of n/a
        facts = [f for f in facts if f[1] != fmt.NA or f[0] == "decode tok/s"]
        _table(body, ["figure", "value"], facts, indent="")
        if r.get("confound"):
            body.append(f"\n{r['confound']}\n", "bold")
        if r.get("note"):
            body.append(f"\nnote: {r['note']}\n")

        diff = r.get("diff") or {}
        body.append("\n")
        if r.get("is_baseline"):
            body.append("configuration: the baseline (the others are compared with it)\n", "bold")
        elif isinstance(diff, dict) and diff:
            body.append(f"configuration against {base or 'its base'}\n", "bold")
            _table(body, ["knob", base or "base", row.name],
                   [[knob, _setting(change, 0), _setting(change, 1)] for knob, change in diff.items()])
        else:
            body.append(f"configuration: same as {base or 'its base'}\n", "bold")

        peaks = r.get("peak_mem_bytes") or {}
        body.append("\npeak memory per GPU (GiB)\n", "bold")
        if peaks:
            gpus = sorted(peaks, key=lambda k: int(k) if str(k).isdigit() else 0)
            total = max((g.mem_total_bytes or 0 for g in store.gpus.values()), default=0)
            _table(body, ["GPU", *map(str, gpus)], [["peak", *(gib(peaks[g]) for g in gpus)]]
                   + ([["of", *(gib(total) for _ in gpus)]] if total else []))
        else:
            body.append("  n/a (no GPU sample during the trial)\n")
    alerts = [store.alerts[key] for key in row.alert_keys]
    body.append(f"\nalerts ({len(alerts)})\n", "bold")
    for alert in alerts:
        first = alert.message.splitlines()[0] if alert.message else ""
        body.append(f"  • {fmt.clock(store.rel_s(alert.t_s))}  {alert.severity} {alert.alert_kind}, "
                    f"ranks {ranks_label(alert.ranks)}: {first}\n")
    if not alerts:
        body.append("  none\n")
    return body


def _server_startup(found: object) -> str:
    """A ledger row's server_startup (tuiapp.common.startup_phases.as_json), as one line."""
    if not isinstance(found, dict) or not found:
        return fmt.NA
    phases, graphs = found.get("phases_s"), found.get("cuda_graph_s")
    try:  # a ledger file is read as written: a field of another type is no reading
        return startup_phases.text(phases, graphs, found.get("post_startup_s")) or fmt.NA
    except (AttributeError, TypeError, ValueError):
        return fmt.NA


def _setting(change, side: int) -> str:
    """One side of a diff entry: ``{"baseline": a, "trial": b}`` (the ledger's) or ``[a, b]``."""
    if isinstance(change, dict):
        value = change.get(("baseline", "trial")[side])
    elif isinstance(change, (list, tuple)) and len(change) == 2:
        value = change[side]
    else:
        value = change if side else None
    return "(default)" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


class TrialScreen(_DetailScreen):
    def __init__(self, row: TrialRow, store: DashboardStore) -> None:
        super().__init__(f"trial {row.index + 1}/{row.total}: {row.name}", trial_text(row, store))


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.question, id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

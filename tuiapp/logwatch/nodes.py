"""Alerts from several log sources (nodes) -> one incident per failure seen on several nodes.

Each source has its own LogWatcher (its own records, ranks and grouping, exactly as for
``launch``); its alerts pass through here on the way to the bus. An alert is tagged with
its source's node. The first alert of an incident on node B that has the same kind and
the same wording (numbers and addresses aside: "GPU 3 has 79.1 GiB" on one node is "GPU 0
has 79.3 GiB" on another) as a recent incident on node A joins A's incident: it is
re-published under A's alert id with both nodes and the union of the ranks (TP ranks of a
multi-node deployment are global, so they do not collide). Later updates of B's incident
update the joint one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tuiapp.events import Alert

# Nodes of one deployment fail within seconds of each other (an NCCL timeout on one node is
# noticed by the others only at their next collective), wider than one node's 2 s window.
CROSS_NODE_WINDOW_S = 10.0
_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")


def _wording(message: str) -> str:
    return _VARYING.sub("#", message).strip()


@dataclass(slots=True)
class _Joint:
    alert_id: int
    kind: str
    wording: str
    last_s: float
    parts: dict[tuple[str, int], Alert] = field(default_factory=dict)  # (node, inner id) -> latest

    def alert(self) -> Alert:
        parts = list(self.parts.values())
        first = parts[0]
        ranks = sorted({r for a in parts for r in a.ranks})
        nodes = sorted({node for node, _ in self.parts})
        severity = "error" if any(a.severity == "error" for a in parts) else first.severity
        lines = [a.first_line for a in parts if a.first_line is not None]
        return first.model_copy(update={
            "alert_id": self.alert_id, "ranks": ranks, "nodes": nodes, "severity": severity,
            "first_line": min(lines) if lines else None, "t_s": time.time(),
        })


class NodeMerger:
    """One per session; ``publisher(node)`` gives the publish function for one source."""

    def __init__(self, publish: Callable[[Any], None], window_s: float = CROSS_NODE_WINDOW_S) -> None:
        self._publish = publish
        self.window_s = window_s
        self._by_part: dict[tuple[str, int], _Joint] = {}
        self._recent: list[_Joint] = []

    def publisher(self, node: str | None) -> Callable[[Any], None]:
        if node is None:
            return self._publish  # a single unlabelled source: nothing to tag or merge

        def publish(ev: Any) -> None:
            if isinstance(ev, Alert) and ev.alert_id:
                self._alert(node, ev)
            else:
                self._publish(ev)

        return publish

    def _alert(self, node: str, ev: Alert) -> None:
        key = (node, ev.alert_id)
        cause = self._by_part.get((node, ev.caused_by)) if ev.caused_by else None
        if cause is not None and cause.alert_id != ev.caused_by:
            ev = ev.model_copy(update={"caused_by": cause.alert_id})  # its cause joined another node's incident
        now = time.monotonic()
        joint = self._by_part.get(key)
        if joint is None:
            wording = _wording(ev.message)
            for cand in reversed(self._recent):
                if (cand.kind == ev.alert_kind and cand.wording == wording and now - cand.last_s <= self.window_s
                        and all(n != node for n, _ in cand.parts)):
                    joint = cand
                    break
            if joint is None:
                joint = _Joint(ev.alert_id, ev.alert_kind, wording, now)
                self._recent.append(joint)
                del self._recent[:-256]
            self._by_part[key] = joint
        joint.parts[key] = ev
        joint.last_s = now
        self._publish(joint.alert())

"""What a log collector wrapped around each line, and how to take it off.

Logs reach us through whatever collected them: ``docker logs -t`` (RFC 3339 with
nanoseconds), docker's json-file logs on disk (``{"log":"...\\n","stream":...}``), docker compose (``sglang-1  | ``), ``kubectl logs --prefix`` (``[pod/x/c] ``),
Open MPI's ``mpirun --tag-output`` (``[1,0]<stderr>:``, with ``--timestamp-output`` a date before it),
the kubelet's CRI files (``<ts> stdout F ``), journald (``Dec 01 20:18:09 host unit[pid]: ``),
cloud logging exports (``ERROR 2025-04-07T19:13:52.317869663Z ``), Kibana/ELK
(``May 16, 2026 @ 20:46:57.892    ``) and browser log viewers (``[2025-11-06T02:10:00.703Z] ``, also
with the line's source after it: ``[<ts>] <pod> >> ``).
One collector wraps every line of a file the same way, so the envelope is decided from the
first lines (ENVELOPE_SAMPLE of them, MIN_SHARE of which must carry it) and then taken off
every line that carries it; lines without it (a collector that split a long line, compose's
own "Attaching to" lines) are left alone. Envelopes can nest (compose
around ``docker -t``), so up to three layers are peeled.

Two wrappers are not per-file and are taken off wherever they appear: ANSI colour codes (also
as the ``^[[36m`` text a terminal paste leaves, or as rsyslog's ``#033[36m`` escapes) and Ray's
actor tag ``(WorkerDict pid=N) ``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

import orjson

JSON_KEYS = ("log", "message", "msg", "MESSAGE", "line")
JSON_LEVEL_KEYS = ("level", "levelname", "severity", "lvl")
_JSON_ERROR_LEVELS = {"ERROR", "ERR", "FATAL", "CRITICAL", "CRIT", "EMERG", "EMERGENCY", "ALERT"}
ENVELOPE_SAMPLE = 8  # non-blank lines looked at before the envelope is fixed
MIN_SHARE = 0.75  # of them that must carry it

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\^\[\[[0-9;]*m")
# rsyslog writes control characters as "#" and three octal digits: ESC "#033", CR "#015", TAB "#011"
_SYSLOG_ESC_RE = re.compile(r"#033\[[0-9;?]*[A-Za-z]|#015$")
# Ray's "(WorkerDict pid=N, ip=..)", vLLM's "(VllmWorker rank=1 pid=N)", nested "(A pid=1) (B pid=2) "
_BARE_SGR_RE = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
# (and Ray's own processes, tagged without a pid: "(raylet, ip=172.17.0.3) ", "(gcs_server) ")
_RAY_RE = re.compile(r"(?:\((?:(?:[\w.:-]+)(?: [\w.-]+=[\w.-]+)* pid=\d+|raylet|gcs_server|dashboard_agent"
                     r"|runtime_env_agent)(?:, ip=[\d.]+)?\) ?){1,3}")

_TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# journald writes the month in the machine's locale ("mar 15", "déc. 3", "11月 15")
_LOCAL_MON = r"(?:" + _MON + r"|[^\W\d_]{3,4}\.?|\d{1,2}月)"
# name -> pattern of the envelope (group "t": its timestamp, when it has one)
ENVELOPES: dict[str, re.Pattern[str]] = {
    # docker's json-file driver as stored on disk: {"log":"<line>\n","stream":"stdout","time":"..."}
    "docker_json": re.compile(r'\{\s*"log"\s*:\s*"'),
    # other JSON lines (fluent-bit, Vector, journalctl -o json, Loki's JSON export): the line
    # is the string under one of these keys
    "json": re.compile(r'\{.*"(?:' + "|".join(JSON_KEYS) + r')"\s*:\s*"'),
    # Loki's logcli: "<ts> {app="sglang", pod="..."} <line>"
    "loki": re.compile(r"(?P<t>" + _TS + r")\s+\{[^{}]*\}\s"),
    # syslog (RFC 5424) as a relay forwards it: "<13>1 <ts> host app pid msgid - "
    "syslog": re.compile(r"<\d{1,3}>1 (?P<t>" + _TS + r") \S+ \S+ \S+ \S+ (?:-|\[[^\]]*\]) "),
    "cri": re.compile(r"(?P<t>" + _TS + r") (?:stdout|stderr) [FP] "),
    "docker_ts": re.compile(r"(?P<t>" + _TS + r") "),
    # one separator only: what follows may be an indented traceback line
    "cloud": re.compile(r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY)\s+(?P<t>" + _TS + r")[ \t]"),
    "kibana": re.compile(r"(?P<t>" + _MON + r" \d{1,2}, \d{4} @ \d\d:\d\d:\d\d(?:\.\d+)?)(?:\t| {4}| )"),
    # (a viewer may put the line's source after the time: "[<ts>] <pod> >> <line>")
    "bracket_iso": re.compile(r"\[(?P<t>" + _TS + r")\] (?:[\w.:/-]{1,120} >> )?"),
    # Grafana's log table copied or downloaded: "2025-06-01 10:00:00.123<tab or spaces>"
    "grafana": re.compile(r"(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z| ?[+-]\d\d:?\d\d)?)(?:\t| {2,}| (?=\[))"),
    "journald": re.compile(r"(?P<t>" + _LOCAL_MON + r" [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) \S+ [\w.@/-]+(?:\[\d+\])?: "),
    "journald_iso": re.compile(r"(?P<t>" + _TS + r") \S+ [\w.@/-]+(?:\[\d+\])?: "),
    "kubectl": re.compile(r"\[pod/[\w.-]+/[\w.-]+\] "),
    # pm2's "0|app  | " (process id and name)
    "pm2": re.compile(r"\d+\|[\w.@-]+\s*\| ?"),
    # (a level in that column is loguru's "ERROR    | ...", not a service's name)
    "compose": re.compile(r"(?!(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|WARN|ERROR|CRITICAL|FATAL)\s*\|)[\w.@-]+\s*\| "),
    # Open MPI's --tag-output "[jobid,rank]<stderr>:" (after --timestamp-output's "Thu Jan 23 11:55:50 2025");
    # the line follows the colon directly, its own indent kept
    "mpi": re.compile(r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _MON + r" [ \d]\d \d\d:\d\d:\d\d \d{4})?"
                      r"\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:"),
    # a launcher's per-task label: srun --label, pdsh ("0: <line>")
    "label": re.compile(r"\d{1,5}: "),
    # a paste quoted in markdown, line by line (also as list items: "> - <line>")
    "quote": re.compile(r"> ?(?:[-*] (?=\S))?"),
    # a paste as a markdown list, one item a line
    "list": re.compile(r"[-*] (?=\S)"),
}
_ORDER = list(ENVELOPES)  # more specific first: cri and loki before docker_ts, journald_iso after both


_RAY_OWN = ("(raylet", "(gcs_server", "(dashboard_agent", "(runtime_env_agent")


def strip_ansi(text: str) -> str:
    if "#0" in text and ("#033[" in text or text.endswith(("#015", "#011")) or "#011" in text):
        text = _SYSLOG_ESC_RE.sub("", text).replace("#011", "\t")
    if "\x1b" in text or "^[[" in text:
        return _ANSI_RE.sub("", text)
    # colour codes pasted without their ESC byte ("[33m(raylet)[0m"); "[2026-..." is no such code
    if text[:1] == "[" and text[1:3] != "20" and "m" in text[2:8] and _BARE_SGR_RE.match(text):
        return _BARE_SGR_RE.sub("", text)
    return text


def strip_ray(text: str) -> str:
    if text.startswith("(") and ("pid=" in text[:80] or text.startswith(_RAY_OWN)):
        m = _RAY_RE.match(text)
        if m:
            text = text[m.end():]
    return text


@dataclass
class EnvelopeDetector:
    """Decides the file's envelope from its first lines, then strips it from every line."""

    layers: list[str] = field(default_factory=list)
    decided: bool = False
    _sample: list[str] = field(default_factory=list)

    def unwrap(self, text: str) -> str:
        """The line as the server printed it (colours, actor tag and envelope removed)."""
        if not self.decided and text.strip():
            self._sample.append(text)
            self._decide(final=len(self._sample) >= ENVELOPE_SAMPLE)
        if self.layers and self.layers[0] in _JSON_LAYERS:
            text = _json_log(text)
        text = strip_ansi(text)
        for name in self.layers:
            if name in _JSON_LAYERS:
                continue
            m = ENVELOPES[name].match(text)
            if m is None:
                break
            text = text[m.end():]
        if text[:3] in _FENCES:
            if _FENCE_LINE_RE.fullmatch(text):
                return ""  # a code fence around a pasted log is not part of it
            text = text[3:]  # (a paste glued the log's first line to the fence: "```53.26.801 E CUDA error: ...")
        return strip_ray(text)

    def _decide(self, final: bool) -> None:
        # Until the sample is complete, the envelope most lines so far carry is used already
        # (a live stream must not wait for eight lines to raise its first alert, and compose
        # starts with "Attaching to ..." lines of its own); then it takes MIN_SHARE of them.
        lines = [strip_ansi(t) for t in self._sample]
        layers: list[str] = []
        for _ in range(3):
            counts = [(sum(1 for t in lines if ENVELOPES[name].match(t)), -k, name) for k, name in enumerate(_ORDER)]
            hits, _, best = max(counts)
            if hits == 0 or (final and hits < len(lines) * MIN_SHARE):
                break
            layers.append(best)
            if best in _JSON_LAYERS:
                lines = [strip_ansi(_json_log(t)) for t in lines]
                continue
            rx = ENVELOPES[best]
            lines = [t[m.end():] if (m := rx.match(t)) else t for t in lines]
        self.layers = layers
        if final:
            self.decided = True
            self._sample = []

    def timestamp(self, text: str) -> str | None:
        """The outer envelope's timestamp text, if it has one."""
        if not self.layers:
            return None
        m = ENVELOPES[self.layers[0]].match(strip_ansi(text))
        if m is None or "t" not in m.groupdict():
            return None
        return m.group("t")


_JSON_LAYERS = ("docker_json", "json")
_FENCES = ("```", "~~~")
# a fence alone, or with its info string ("```Shell", "~~~ text")
_FENCE_LINE_RE = re.compile(r"(?:```|~~~)[`~]*\s*[\w+#.-]*\s*")


def _json_log(text: str) -> str:
    if not text.startswith("{"):
        return text
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if not isinstance(obj, dict):
        return text
    for key in JSON_KEYS:
        log = obj.get(key)
        if isinstance(log, str):
            # a structured logger keeps the level beside the message: it stays in front of it
            level = next((v for k in JSON_LEVEL_KEYS if isinstance(v := obj.get(k), str)), "")
            if level.upper() in _JSON_ERROR_LEVELS:
                return f"{level.upper()} {log.rstrip()}"
            return log.rstrip("\n")
    return text


def entries_newest_first(lines: list[str], det: EnvelopeDetector) -> bool:
    """True when the envelope's timestamps run backwards (a cloud or Kibana export that
    lists the newest entry first). Compared as text: every timestamp format above sorts
    chronologically as text within one file except Kibana's and journald's month names."""
    stamps: list[str] = []
    for t in lines:
        s = det.timestamp(t)
        if s is not None:
            stamps.append(_sortable(s))
        if len(stamps) >= 200:
            break
    if len(stamps) < 2:
        return False
    down = sum(1 for a, b in pairwise(stamps) if b < a)
    up = sum(1 for a, b in pairwise(stamps) if b > a)
    return down > up


_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def _sortable(stamp: str) -> str:
    m = re.match(r"(\w{3}) (\d{1,2}), (\d{4}) @ (.*)", stamp)  # Kibana
    if m:
        return f"{m.group(3)}-{_MONTHS.get(m.group(1), 0):02d}-{int(m.group(2)):02d}T{m.group(4)}"
    m = re.match(r"(\w{3}) ([ \d]\d) (.*)", stamp)  # journald short
    if m:
        return f"{_MONTHS.get(m.group(1), 0):02d}-{int(m.group(2)):02d}T{m.group(3)}"
    return stamp

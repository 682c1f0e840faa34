"""A caption a person or a page put above a paste ("Error message", "Error Logs:", "Crash report"):
the name of what follows, not a failure of its own. One rule for the generic layer and the last
resort, which would both read its first word as an error level."""

from __future__ import annotations

import re

_CAPTION_RE = re.compile(
    r"\W*(?:[Ee]rror|ERROR|[Ff]ailure|FAILURE|[Cc]rash|CRASH) ?(?:[Mm]essages?|MESSAGES?|[Ll]ogs?|LOGS?|[Oo]utput"
    r"|OUTPUT|[Dd]etails?|[Ii]nfo|[Tt]race(?:back)?|[Rr]eports?|[Ss]tack|[Dd]escription)?\W*")


def is_caption(line: str) -> bool:
    """The whole line is a caption: the word error (failure, crash) alone or with the name of what
    follows, with punctuation or markup around it."""
    return len(line) < 40 and _CAPTION_RE.fullmatch(line.strip()) is not None

"""Find the line of a TOML key from a path such as ``("trial", 2, "bench", "runs")``.

tomllib keeps no positions, so we scan the text: table headers (``[a.b]``, ``[[trial]]``,
counted per array), ``key = value`` lines and dotted keys. Inline tables are not entered:
a path inside one resolves to the line of the key that holds it, which is where a human
would look anyway. Good enough for error messages; never used to read values.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+))*)\s*=""")
_PART = re.compile(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)\s*""")


def _split_key(text: str) -> list[str]:
    return [p.strip("\"'") for p in _PART.findall(text)]


def key_lines(text: str) -> list[tuple[tuple, int]]:
    """Every header and key in the document as (path, 1-based line number)."""
    out: list[tuple[tuple, int]] = []
    arrays: dict[tuple, int] = {}  # array-of-tables path -> index of its last element
    table: tuple = ()
    in_multiline: str | None = None
    for line_no, line in enumerate(text.splitlines(), start=1):
        if in_multiline:
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if m := _HEADER.match(line):
            parts = _split_key(m.group(2))
            path: tuple = ()
            for i, part in enumerate(parts):
                path = (*path, part)
                last = i == len(parts) - 1
                if m.group(1) == "[[" and last:
                    arrays[path] = arrays.get(path, -1) + 1
                    # a new array element forgets the sub-tables of the previous one
                    for key in [k for k in arrays if len(k) > len(path) and k[: len(path)] == path]:
                        del arrays[key]
                if path in arrays:
                    path = (*path, arrays[path])
            table = path
            out.append((table, line_no))
            continue
        if m := _KEY.match(line):
            out.append(((*table, *_split_key(m.group(1))), line_no))
            rest = line[m.end():]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_multiline = quote
    return out


def line_of(text: str, loc: tuple) -> int | None:
    """The line of the longest prefix of ``loc`` that appears in the text."""
    best_len, best_line = -1, None
    for path, line_no in key_lines(text):
        n = 0
        while n < len(path) and n < len(loc) and path[n] == loc[n]:
            n += 1
        if n == len(path) and n > best_len:  # the whole key must be a prefix of loc
            best_len, best_line = n, line_no
    return best_line if best_len > 0 else None

"""Regenerate tuiapp/logwatch/catalogue.json: the error messages the sources can print.

Reads, without importing or building anything:
- SGLang's Python (wheels or sdists from PyPI, any number of releases; the router's Python
  package ``sglang_router`` likewise): ``logger.error/exception/critical/fatal(...)`` and
  ``raise X(...)`` messages, read with ``ast`` (f-strings, ``%`` and ``.format`` templates);
- C/C++ sources (a checkout, or a bare git directory as ``fetch`` brings it): NCCL's
  ``WARN(...)``, torch c10's ``LOG(ERROR) <<`` / ``TORCH_CHECK`` / ``C10_THROW_ERROR``, the
  ROCm runtime's ``LogError``/``LogPrintfError``/``ClPrint(amd::LOG_ERROR ...)`` and its
  ``fprintf(stderr, ...)`` reports (``Memory access fault by GPU node-%u ...``);
- Rust sources, if given (the router/gateway): ``error!(...)``.

A template's ``head`` is its literal text before the first placeholder; the detector matches
lines by head (tuiapp/logwatch/catalogue.py).

    pip download sglang==0.4.6 sglang==0.5.2 ... sglang-router --no-deps -d /tmp/catsrc/pypi
    (fetch github:NVIDIA/nccl, github:ROCm/clr, github:ROCm/ROCR-Runtime with the search tool)
    .venv/bin/python tools/error_catalogue.py --pypi /tmp/catsrc/pypi \\
        --c nccl=/work/.mirror/NVIDIA+nccl/repo --c rocm-clr=/work/.mirror/ROCm+clr/repo \\
        --c rocm-rocr=/work/.mirror/ROCm+ROCR-Runtime/repo [--c torch-c10=DIR] [--rust router=DIR]
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import orjson

OUT = Path(__file__).resolve().parent.parent / "tuiapp" / "logwatch" / "catalogue.json"
LOG_LEVELS = {"error": "error", "exception": "exception", "critical": "critical", "fatal": "fatal"}
PLACEHOLDER = "\x00"  # stands for a value in a template until the head is cut

_C_PATTERNS = [
    # (level, regex whose group 1 is the first string literal)
    ("error", re.compile(r'\bWARN\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),  # NCCL
    ("error", re.compile(r'\bLOG\(\s*(?:ERROR|FATAL)\s*\)\s*<<\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),  # c10 glog
    ("raise", re.compile(r'\b(?:TORCH_CHECK\w*|C10_THROW_ERROR)\([^;"]*?,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),
    ("error", re.compile(r'\b(?:LogError|LogPrintfError)\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),  # ROCclr
    ("error", re.compile(r'\bClPrint\(\s*amd::LOG_ERROR\s*,[^,]*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),
    ("error", re.compile(r'\bfprintf\(\s*stderr\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')),
]
_RUST_ERROR = re.compile(r'\berror!\(\s*(?:[\w.]+\s*=\s*[^,]+,\s*)*"((?:[^"\\]|\\.)*)"')
_FAILURE_WORDS = re.compile(r"(?i)error|fail|fault|abort|invalid|unable|cannot|can't")
_C_EXT = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh")
_PRINTF = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L|PRI\w+)?[diouxXeEfgGcspn%]")


# ---------------------------------------------------------------- sources


def _archive_files(path: Path) -> Iterator[tuple[str, bytes]]:
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if name.endswith(".py") and not _skipped(name):
                    yield name, z.read(name)
    elif path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith((".py", ".rs")) and not _skipped(m.name):
                    f = t.extractfile(m)
                    if f is not None:
                        yield m.name, f.read()


def _skipped(name: str) -> bool:
    """Tests and benchmarks print nothing a server does."""
    return any(part in name for part in ("/test", "/benchmark", "/example", "/doc")) or name.startswith(
        ("test", "benchmark", "example", "doc"))


def _tree_files(root: Path, exts: tuple[str, ...]) -> Iterator[tuple[str, bytes]]:
    """A checkout, or a bare git directory (its HEAD)."""
    if (root / "HEAD").is_file() and (root / "objects").is_dir():
        names = subprocess.run(["git", "-C", str(root), "ls-tree", "-r", "--name-only", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.split("\n")
        for name in names:
            if name.endswith(exts) and not _skipped(name):
                blob = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{name}"],
                                      capture_output=True, check=False).stdout
                yield name, blob
        return
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in exts:
            yield str(p.relative_to(root)), p.read_bytes()


# ---------------------------------------------------------------- Python


def _template(node: ast.AST) -> str | None:
    """A message expression as text, PLACEHOLDER where a value goes; None if not a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                parts.append(PLACEHOLDER)
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _template(node.left)
        return None if left is None else _PRINTF.sub(PLACEHOLDER, left)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else PLACEHOLDER) + (right if right is not None else PLACEHOLDER)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
        base = _template(node.func.value)
        return None if base is None else re.sub(r"\{[^{}]*\}", PLACEHOLDER, base)
    return None


def _python_templates(name: str, data: bytes) -> Iterator[dict]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            level = LOG_LEVELS.get(node.func.attr)
            owner = node.func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(
                owner, ast.Attribute) else ""
            if level and "log" in owner_name.lower():
                text = _template(node.args[0])
                if text is not None and len(node.args) > 1 and isinstance(node.args[0], ast.Constant):
                    text = _PRINTF.sub(PLACEHOLDER, text)  # logging's own lazy "%s" arguments
                if text is not None:
                    yield {"level": level, "text": text, "where": name}
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            func = node.exc.func
            exc = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            text = _template(node.exc.args[0])
            if exc and text is not None:
                yield {"level": "raise", "exception": exc, "text": text, "where": name}


# ---------------------------------------------------------------- C/C++, Rust


def _c_string(literals: str) -> str:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', literals)
    s = "".join(parts)
    s = s.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
    return _PRINTF.sub(PLACEHOLDER, s)


def _c_templates(name: str, data: bytes) -> Iterator[dict]:
    text = data.decode("utf-8", "replace")
    for level, rx in _C_PATTERNS:
        for m in rx.finditer(text):
            s = _c_string(m.group(1))
            if "fprintf" in rx.pattern and not _FAILURE_WORDS.search(s):
                continue  # stderr also gets usage text and progress
            yield {"level": level, "text": s, "where": name}


def _rust_templates(name: str, data: bytes) -> Iterator[dict]:
    text = data.decode("utf-8", "replace")
    for m in _RUST_ERROR.finditer(text):
        s = re.sub(r"\{[^{}]*\}", PLACEHOLDER, m.group(1).replace('\\"', '"'))
        yield {"level": "error", "text": s, "where": name}


# ---------------------------------------------------------------- output


def head_of(text: str) -> str:
    """The literal text before the first placeholder, on its first line, trimmed."""
    head = text.split(PLACEHOLDER, 1)[0].split("\n", 1)[0]
    return head.lstrip()


def build(pypi: list[Path], c_sources: list[tuple[str, Path]], rust: list[tuple[str, Path]]) -> dict:
    seen: dict[tuple[str, str, str], dict] = {}
    sources = []
    for archive in pypi:
        label = archive.name.split("-")[0] + "==" + archive.name.split("-")[1]
        n = 0
        for name, data in _archive_files(archive):
            gen = _rust_templates(name, data) if name.endswith(".rs") else _python_templates(name, data)
            for t in gen:
                n += _keep(seen, label.split("==")[0], label, t)
        sources.append({"source": label, "origin": f"PyPI {archive.name}", "new_templates": n})
    for label, root, parse, exts in ([(lbl, p, _c_templates, _C_EXT) for lbl, p in c_sources]
                                     + [(lbl, p, _rust_templates, (".rs",)) for lbl, p in rust]):
        n = 0
        for name, data in _tree_files(root, exts):
            for t in parse(name, data):
                n += _keep(seen, label, label, t)
        sources.append({"source": label, "origin": _origin(root), "new_templates": n})
    templates = sorted(seen.values(), key=lambda t: (t["source"], t["level"], t.get("text", t["head"]), t.get("exception", "")))
    return {"generated_by": "tools/error_catalogue.py", "sources": sources, "templates": templates}


def _keep(seen: dict, source: str, release: str, t: dict) -> int:
    text = t["text"].replace(PLACEHOLDER, "{}")
    if not text.strip("{} \n"):
        return 0
    key = (source, t["level"], text if t["level"] != "raise" else t["exception"] + head_of(t["text"])[:120])
    if key in seen:
        return 0
    # a raised message is printed as "Type: message", which the detector reads as an exception
    # line anyway: its head is kept for reference, the rest of the row stays small
    row = {"source": source, "level": t["level"], "head": head_of(t["text"])[:120]}
    if "exception" in t:
        row["exception"] = t["exception"]
    else:
        row.update(text=text[:200], where=t["where"].rsplit("/", 1)[-1], since=release)
    seen[key] = row
    return 1


def _origin(root: Path) -> str:
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        return f"{root.parent.name.replace('+', '/')}@{rev[:12]}"
    except (OSError, subprocess.CalledProcessError):
        return str(root)


def _labelled(values: list[str]) -> list[tuple[str, Path]]:
    out = []
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not Path(path).exists():
            raise SystemExit(f"error_catalogue: expected LABEL=DIR that exists, got {v!r}")
        out.append((label, Path(path)))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pypi", type=Path, help="a folder of sglang / sglang-router wheels or sdists")
    ap.add_argument("--c", action="append", default=[], metavar="LABEL=DIR", help="C/C++ sources")
    ap.add_argument("--rust", action="append", default=[], metavar="LABEL=DIR", help="Rust sources")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    def version_key(p: Path) -> tuple:
        return (p.name.split("-")[0], [int(x) if x.isdigit() else 0 for x in re.split(r"[.]", p.name.split("-")[1])])

    pypi = sorted((p for p in args.pypi.iterdir() if p.suffix in (".whl", ".zip") or p.name.endswith(".tar.gz")),
                  key=version_key) if args.pypi else []
    cat = build(pypi, _labelled(args.c), _labelled(args.rust))
    # one template a line: a regenerated catalogue diffs line by line
    rows = b",\n".join(orjson.dumps(t) for t in cat["templates"])
    head = orjson.dumps({k: v for k, v in cat.items() if k != "templates"}, option=orjson.OPT_INDENT_2)
    args.out.write_bytes(head[:-2] + b',\n  "templates": [\n' + rows + b"\n]}\n")
    levels: dict[str, int] = {}
    for t in cat["templates"]:
        levels[t["level"]] = levels.get(t["level"], 0) + 1
    print(f"{args.out}: {len(cat['templates'])} templates from {len(cat['sources'])} sources; "
          + ", ".join(f"{k} {v}" for k, v in sorted(levels.items())))
    for s in cat["sources"]:
        print(f"  {s['source']:<22} {s['new_templates']:>5} new  ({s['origin']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""tuiapp attach URL: benchmark and monitor a server that is already running."""

from __future__ import annotations

import argparse
import os
from typing import Any

from tuiapp.commands import metrics_args, screenshots

HELP = "attach to a running SGLang (or OpenAI-compatible) server and benchmark it continuously"

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tuiapp.commands.bench_args import add_bench_arguments
    from tuiapp.commands.net_args import add_net_arguments

    parser.add_argument("url", nargs="?", help="server base URL, e.g. http://127.0.0.1:30000")
    parser.add_argument("--slurm-job", metavar="ID",
                        help="attach to Slurm job ID: its nodes, node logs and (for a job of trials --slurm) "
                             "its server URL (docs/slurm.md)")
    parser.add_argument("--api-key", metavar="KEY", help="sent as 'Authorization: Bearer KEY' (never printed or recorded)")
    parser.add_argument("--headless", action="store_true", help="no UI: one line per run on stdout")
    parser.add_argument("--summary", metavar="FILE", help="write a JSON summary of the runs at the end")
    parser.add_argument("--record", metavar="FILE", help="record every event to FILE for replay")
    parser.add_argument("--no-ignore-eos", action="store_true", help="let the model stop at EOS")
    parser.add_argument("--no-flush-cache", action="store_true", help="do not flush the server cache after warm-up")
    parser.add_argument("--model", help="model name for the OpenAI APIs (default: the first of /v1/models)")
    parser.add_argument("--trial", help="label runs with this trial name")
    parser.add_argument("--first-token-timeout", type=float, default=120.0, metavar="S",
                        help="a request with no first token after S seconds fails as 'timeout' (default 120)")
    parser.add_argument("--stall-timeout", type=float, default=30.0, metavar="S",
                        help="a request whose output stops for S seconds fails as 'stalled' (default 30)")
    parser.add_argument("--connect-timeout", type=float, default=5.0, metavar="S",
                        help="seconds to open a connection to the server (default 5)")
    parser.add_argument("--ready-timeout", type=float, default=60.0, metavar="S",
                        help="wait this long for a server that is starting (refuses connections, answers 503"
                             " or says 'starting') before giving up (default 60)")
    parser.add_argument("--server-wait-s", type=float, default=60.0, metavar="S",
                        help="headless: give up (exit 1) when the server stays unreachable this long after it"
                             " served (default 60; the dashboard waits until you quit)")
    parser.add_argument("--metrics-interval", type=float, default=1.0, metavar="S",
                        help="poll the server's /metrics every S seconds (default 1)")
    parser.add_argument(
        "--telemetry", choices=["auto", "nvml", "sim", "dcgm", "off"], default="auto",
        help="GPU telemetry: auto = the simulator's GPUs when URL is tuiapp's simulator, else this"
        " machine's GPUs when the URL is local (plus --dcgm); sim = the simulator's GPUs at URL",
    )
    parser.add_argument("--dcgm", action="append", metavar="URL", help="a dcgm-exporter to read remote GPUs from")
    parser.add_argument("--theme", help="UI theme")
    logs = parser.add_argument_group("server log (repeatable; NODE= labels a node of a multi-node server)")
    logs.add_argument("--log", action="append", default=[], metavar="[NODE=]FILE",
                      help="follow a log file the server writes (from its end; survives rotation; may not exist yet)")
    logs.add_argument("--log-from-start", action="store_true", help="read --log files from their start first")
    logs.add_argument("--log-cmd", action="append", default=[], metavar="'[NODE=]CMD'",
                      help="watch the output of a shell command, restarted when it exits"
                      " (e.g. 'docker logs -f --since 0s NAME', 'ssh n1 tail -F /path')")
    screenshots.add_argument(parser)
    metrics_args.add_arguments(parser)
    add_bench_arguments(parser)
    add_net_arguments(parser)


def _settings(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from tuiapp.bench.settings import BenchSettings, Timeouts
    from tuiapp.commands.bench_args import load_settings, workload_of
    from tuiapp.common.errors import UsageError

    workload = workload_of(args)
    try:
        load = load_settings(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    fields = dict(
        api="generate" if args.api == "auto" else args.api,  # auto: settled by for_server
        workload=workload,
        max_new_tokens=args.max_new_tokens,
        ignore_eos=not args.no_ignore_eos,
        concurrency=args.concurrency,
        requests_per_run=args.requests_per_run,
        runs=args.runs,
        warmup_requests=args.warmup,
        flush_cache=not args.no_flush_cache,
        model=args.model,
    )
    fields.update(load)  # --output-tokens MEAN[:SPREAD] overrides --max-new-tokens
    try:
        return BenchSettings(
            timeouts=Timeouts(
                connect_s=args.connect_timeout,
                first_token_s=args.first_token_timeout,
                stall_s=args.stall_timeout,
            ),
            **fields,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")  # a model-level check: its message says where
        raise UsageError(f"{where}: {msg}" if where else msg) from None


def for_server(settings: Any, info: Any, args: argparse.Namespace, found: Any = None) -> Any:
    """What the server that answered can take (bench/settings.py ``for_server``); ``found``:
    the discovery's model name, if any."""
    from tuiapp.bench.settings import for_server as adapt

    return adapt(settings, info.engine, api=args.api, model=found.model if found else None,
                 name_no_model=bool(found and found.name_no_model))


def check_options(args: argparse.Namespace) -> None:
    """What argparse cannot judge (positive numbers, empty names, URLs): one-line UsageError."""
    from tuiapp.commands.net_args import check_url
    from tuiapp.common.errors import UsageError

    for name in ("metrics_interval", "ready_timeout", "server_wait_s"):
        value = getattr(args, name)
        if not value > 0:  # NaN too
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    for name in ("model", "trial"):
        if getattr(args, name) == "":
            raise UsageError(f"--{name} must not be empty")
    key = args.api_key
    if key is not None and not (key and key.isascii() and key.isprintable()):
        # it goes into an HTTP header (never echoed: it is a secret)
        raise UsageError("--api-key must be printable ASCII (it is sent as an HTTP header)")
    for url in args.dcgm or []:
        check_url(url, "--dcgm", bare_host=True)


def _check_url(raw: str) -> str:
    """The base URL without a trailing slash, or a one-line UsageError."""
    import httpx

    from tuiapp.common.errors import UsageError

    url = raw.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"URL must start with http:// or https:// (got {raw!r})")
    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL as exc:
        raise UsageError(f"bad URL {raw!r}: {exc}") from None
    if not host:
        raise UsageError(f"URL has no host (got {raw!r})")
    return url


def _is_local(url: str) -> bool:
    import socket
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    return host in _LOCAL_HOSTS or host == socket.gethostname()


class AttachControls:
    """What the UI may do to an attached session: the server is not ours to stop."""

    owns_server = False

    def __init__(self, loop: Any, publish: Any) -> None:
        self._loop = loop
        self._publish = publish

    def pause_bench(self) -> None:
        self._loop.pause()

    def resume_bench(self) -> None:
        self._loop.resume()

    def restart_trial(self) -> None:
        self._loop.restart()

    def stop_server(self) -> None:
        from tuiapp.events import Note

        self._publish(Note(level="warning", text="attached server: not ours to stop", source="attach"))


def telemetry_kind(args: argparse.Namespace, url: str) -> str:
    """The GPU source to open: this machine's GPUs only when they are the server's."""
    from tuiapp.common.errors import UsageError

    if args.telemetry == "dcgm" and not args.dcgm:
        raise UsageError("--telemetry dcgm needs --dcgm URL")
    if args.telemetry != "auto" or _is_local(url):
        return args.telemetry
    return "dcgm" if args.dcgm else "off"  # a remote server: its nodes' exporters, if given


def is_simulator(url: str, api_key: str | None = None, timeout_s: float = 2.0) -> bool:
    """Whether the server is tuiapp's simulator: it alone answers ``/sim/gpus`` with GPUs
    (a real SGLang answers 404), so ``--telemetry auto`` reads its modelled GPUs."""
    import httpx

    from tuiapp.common.http_clients import sync_client

    try:
        with sync_client(url, api_key=api_key, timeout=timeout_s) as client:
            resp = client.get(url.rstrip("/") + "/sim/gpus")
        data = resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("gpus"), list) and bool(data["gpus"])


def _telemetry_sources(kind: str, args: argparse.Namespace, url: str, done: Any, http: Any = None) -> list[Any]:
    """GPU and host samplers; each ends when ``done`` is set."""
    if kind == "off":
        return []
    from tuiapp.telemetry import run_host_sampler, run_telemetry

    async def gpu_source(bus: Any) -> None:
        await run_telemetry(bus.publish, kind, sim_url=url, dcgm_urls=args.dcgm, stop=done,
                            sim_client=http.sync if http is not None else None)

    async def host_source(bus: Any) -> None:
        await run_host_sampler(bus.publish, stop=done)

    from tuiapp.commands.trials import host_samples_wanted

    return [gpu_source, host_source] if _is_local(url) and host_samples_wanted(args) else [gpu_source]


def log_sources(args: argparse.Namespace) -> list[Any]:
    """--log and --log-cmd as LogSources, or a one-line UsageError."""
    from tuiapp.common.errors import UsageError
    from tuiapp.logwatch.sources import LogSourceError, label_sources, parse_source

    try:
        sources = [parse_source("file", v) for v in args.log] + [parse_source("cmd", v) for v in args.log_cmd]
        sources = label_sources(sources)
    except LogSourceError as exc:
        raise UsageError(str(exc)) from None
    for src in sources:
        if src.kind == "file" and os.path.isdir(src.target):
            raise UsageError(f"--log {src.target}: is a directory")
    if args.log_from_start and not args.log:
        raise UsageError("--log-from-start needs --log FILE")
    return sources


def _log_tasks(sources: list[Any], args: argparse.Namespace, publish: Any, done: Any) -> list[Any]:
    if not sources:
        return []
    from tuiapp.logwatch.sources import log_source_tasks

    def wrap(task: Any) -> Any:
        async def log_source(_bus: Any) -> None:
            await task()
        return log_source

    return [wrap(t) for t in log_source_tasks(sources, publish, done, from_start=args.log_from_start)]


def run(args: argparse.Namespace) -> int:
    import asyncio
    import json
    import sys
    from pathlib import Path

    from tuiapp.bench.loop import BenchLoop
    from tuiapp.bench.workload import WorkloadError
    from tuiapp.commands.frontend import run as run_session
    from tuiapp.commands.net_args import apply_net_arguments
    from tuiapp.common.atomic_write import write_atomic
    from tuiapp.common.errors import EXIT_INTERRUPTED, UsageError
    from tuiapp.common.http_clients import ServerClient
    from tuiapp.common.startup_phases import Latest
    from tuiapp.events import Note, ServerState
    from tuiapp.server.info import ServerUnreachable
    from tuiapp.server.metrics_poll import run_metrics_poller
    from tuiapp.server.states import ServerWatch
    from tuiapp.session import Session

    if args.slurm_job:
        from tuiapp.slurm.attach import apply_slurm_job

        apply_slurm_job(args)  # the URL and every node's log, from the job
    if not args.url:
        raise UsageError("attach needs the server's URL (or --slurm-job ID)")
    url = _check_url(args.url)
    apply_net_arguments(args)
    check_options(args)
    if args.summary and not Path(args.summary).parent.is_dir():
        # checked now: finding out after the whole benchmark would lose its results
        raise UsageError(f"--summary: no directory {str(Path(args.summary).parent)!r}")
    settings = _settings(args)
    sources = log_sources(args)
    telemetry = telemetry_kind(args, url)
    try:
        found = asyncio.run(_ready_and_discovered(url, args))
    except ServerUnreachable as exc:
        print(f"tuiapp attach: error: {exc}", file=sys.stderr)
        return 1
    info = found.info
    settings = for_server(settings, info, args, found)
    if args.telemetry == "auto" and info.engine == "sglang" and is_simulator(url, args.api_key):
        telemetry = "sim"  # its GPUs are modelled behind the same URL, wherever it runs

    session = Session(
        title=f"attach {url}",
        sources=[],
        record_path=Path(args.record) if args.record else None,
        header={
            "command": "attach",
            "url": url,
            "api_key": "***" if args.api_key else None,
            "settings": settings.model_dump(mode="json"),
            "trial": args.trial,
        },
    )
    # the dashboard waits for a lost server until you quit; a headless job gives up
    watch = ServerWatch(session.bus.publish, url, wait_s=args.server_wait_s if args.headless else None)
    try:
        loop = BenchLoop(session.bus.publish, url, settings, api_key=args.api_key, trial=args.trial, watch=watch)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    session.controls = AttachControls(loop, session.bus.publish)
    http = ServerClient(url, args.api_key)  # the session's one client of the server (metrics, GPUs)
    session.on_stop = http.aclose
    # Ends the pollers and samplers when the loop is done (an Event binds to the running
    # loop on first use, so making it here is fine).
    done = asyncio.Event()

    async def bench_source(bus: Any) -> None:
        bus.publish(ServerState(state="running", url=url, message="attached"))
        bus.publish(info)
        for text in found.notes:
            bus.publish(Note(level="warning", text=text, source="attach"))
        try:
            await loop.run()
        finally:
            done.set()
        session.finish(0 if _failure(loop) is None else 1)

    startup = Latest()  # the server's own start-up breakdown, for the summary

    async def metrics_source(bus: Any) -> None:
        def publish(event: Any) -> None:
            startup.observe(event)
            bus.publish(event)

        await run_metrics_poller(
            publish, url, api_key=args.api_key, interval_s=args.metrics_interval, stop=done,
            client=http.aio,
        )

    # /metrics and /server_info are SGLang's; another server would answer 404 (or, serving
    # one request at a time, queue the poll behind a benchmark request)
    session.sources = [bench_source, metrics_source] if info.engine == "sglang" else [bench_source]
    session.sources += _telemetry_sources(telemetry, args, url, done, http)
    session.sources += _log_tasks(sources, args, watch.tap(session.bus.publish), done)

    session.metrics = metrics_args.start(args)
    code = run_session(session, headless=args.headless, theme=args.theme, screenshot_dir=args.screenshot_dir)
    summary = loop.summary()
    if startup:
        summary["server_startup"] = startup.as_json()
    if code == EXIT_INTERRUPTED:  # Ctrl-C: what was measured is kept, and marked as cut short
        summary["interrupted"] = True
        if summary.get("max_load"):  # --find-max-load's answer from the probes done so far
            summary["max_load"] = {**summary["max_load"], "complete": False}
            print(f"{summary['max_load']['text']} (interrupted: the answer so far)", flush=True)
    elif loop.warmup_failed:
        print(f"tuiapp attach: error: every warm-up request failed: {loop.warmup_failed}", file=sys.stderr)
    elif code and (why := _failure(loop)) is not None:
        print(f"tuiapp attach: error: {why}", file=sys.stderr)
    if args.summary:
        try:
            write_atomic(args.summary, json.dumps(summary, indent=2) + "\n")
        except OSError as exc:
            print(f"tuiapp attach: error: cannot write {args.summary}: {exc.strerror}", file=sys.stderr)
            return 1
    return code



async def _ready_and_discovered(url: str, args: argparse.Namespace) -> Any:
    """Wait while the server starts (a progress line on stderr), then find what to send."""
    import sys

    import httpx

    from tuiapp.common.http_clients import async_client
    from tuiapp.common.net_errors import cause
    from tuiapp.server.discovery import discover
    from tuiapp.server.info import ServerUnreachable
    from tuiapp.server.states import NotReady, wait_until_ready

    def progress(line: str) -> None:
        print(f"tuiapp attach: {line}", file=sys.stderr, flush=True)

    timeout_s = args.connect_timeout + 5
    async with async_client(url, api_key=args.api_key, timeout=timeout_s) as client:
        try:
            await wait_until_ready(client, url, timeout_s=args.ready_timeout, progress=progress,
                                   request_timeout_s=timeout_s)
        except NotReady as exc:
            raise ServerUnreachable(str(exc)) from None
        except httpx.TimeoutException:  # it accepts and never answers: not a starting server
            raise ServerUnreachable(f"GET {url}/health: no answer within {timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot connect to {url}: {cause(exc)}") from None
        return await discover(url, api=args.api, model=args.model, api_key=args.api_key, timeout_s=timeout_s,
                              client=client)


def _failure(loop: Any) -> str | None:
    """Why the benchmark failed (exit 1), or None: the server was given up on, no request
    succeeded, or a sweep or search lost points (a point with no served request, or never run)."""
    if loop.watch is not None and loop.watch.gave_up_reason:
        return loop.watch.gave_up_reason
    if not any(r.errors < r.requests for r in loop.results):
        # a request served is a figure: one whose tokens all came in one read has TTFT and
        # output tok/s, only no per-stream decode rate
        return "no request of any run succeeded"
    s = loop.settings
    empty = sum(1 for p in loop.points if p.requests <= p.errors)
    if s.find_max_load:
        return f"{empty} probe(s) of --find-max-load had no served request" if empty else None
    planned = len(s.points())
    lost = empty + max(0, planned - len(loop.points)) if s.sweep is not None else empty
    return f"{lost} of {planned} load points lost (no served request, or never run)" if lost else None

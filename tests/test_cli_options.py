"""Every option of every command, generated from the argparse parsers themselves: each runs
at least once (on the simulator where it reaches a server), each bad value is one line on
stderr and exit 2, and no value hypothesis draws gives a traceback.

A new option fails ``test_every_option_has_values`` until it is given a good and a bad value
here. ``main`` is called in this process (no interpreter start per call); "validate" calls
stop where the session would start (``commands.frontend.run`` returns 0), so every check of
the arguments runs and nothing is launched."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuiapp.cli import build_parser, main
from tuiapp.common import net_config
from tuiapp.server.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests/data/logs/healthy_0523_tp8_eagle3.log"
RECORDING = ROOT / "tests/data/record/campaign_2min.jsonl.gz"
PLAN = ROOT / "tests/data/trials/tiny.toml"


def sim_command(port: int) -> list[str]:
    return [sys.executable, "-m", "tuiapp.sim.server", "--sim-speed", "100", "--port", str(port),
            "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8"]


# ---------------------------------------------------------------- what each option takes
#
# GOOD: values that must run; BAD: values that must be refused with one line and exit 2
# (argparse's own refusals - a word for a number, an unknown choice, a value given to a flag -
# are added for every option); NEEDS: what the option needs beside it to mean something.
# "{tmp}", "{url}", "{sim}" are filled in per call.

GOOD: dict[str, list[str | None]] = {
    "--headless": [None], "--json": [None], "--no-ignore-eos": [None], "--no-flush-cache": [None],
    "--log-from-start": [None], "--find-max-load": [None], "--insecure": [None], "--no-preflight": [None],
    "--curves": [None], "--resume": [None], "--sim": [None], "--check": [None], "--dry-run": [None],
    "--slurm": [None], "--summary": [None], "--follow": [None],
    "--record": ["{tmp}/rec.jsonl"], "--ledger": ["{tmp}/ledger.json"], "--ledger-md": ["{tmp}/ledger.md"],
    "--ledger-csv": ["{tmp}/ledger.csv"], "--log-dir": ["{tmp}/logs"], "--theme": ["dark"],
    "--screenshot-dir": ["{tmp}"], "--metrics-port": ["0"], "--metrics-host": ["127.0.0.1"],
    "--api-key": ["sk-options-test"], "--model": ["fake-model"], "--trial": ["t1"], "--name": ["n1"],
    "--first-token-timeout": ["30"], "--stall-timeout": ["10"], "--connect-timeout": ["3"],
    "--ready-timeout": ["60"], "--server-wait-s": ["30"], "--metrics-interval": ["0.5"],
    "--dcgm": ["http://127.0.0.1:1/metrics"], "--gpu-source": ["http://127.0.0.1:1/metrics"],
    "--log": ["{tmp}/server.log"], "--log-cmd": ["true"], "--runs": ["1"], "--concurrency": ["2"],
    "--requests-per-run": ["2"], "--max-new-tokens": ["16"], "--prompts": ["{tmp}/prompts.jsonl"], "--warmup": ["0"],
    "--request-rate": ["50"], "--burstiness": ["0.5"], "--max-concurrency": ["2"], "--input-tokens": ["16:4"],
    "--output-tokens": ["24:4"], "--shared-prefix-tokens": ["8"], "--prefix-groups": ["2"],
    "--sweep": ["concurrency=1,2"], "--slo": ["ttft_ms=5000,tpot_ms=1000"], "--max-search-points": ["2"],
    "--ca-cert": ["{tmp}/ca.pem"], "--proxy": ["http://127.0.0.1:1"], "--only": ["only"], "demo --only": ["new-baseline"],
    "--speed": ["50"], "--sim-speed": ["100"], "--isolate": ["broken"], "--interval": ["0.05"],
    "--metric": ["tpot_s"], "--fail-on": ["slower"], "--min-effect-pct": ["1"], "-o": ["{tmp}/out.md"],
    "--output": ["{tmp}/out.md"], "--html": ["{tmp}/out.html"], "--slurm-job": ["12345"],
    "gpus --sim": ["{sim}"], "attach --summary": ["{tmp}/s.json"],
}
BAD: dict[str, list[str]] = {
    "--record": ["{tmp}"],
    "--screenshot-dir": ["{tmp}/no-such-dir"], "--metrics-port": ["70000", "-1"],
    "--first-token-timeout": ["0", "-1", "nan"], "--stall-timeout": ["0", "nan"], "--connect-timeout": ["0", "nan"],
    "--ready-timeout": ["0", "nan"], "--server-wait-s": ["0", "-5"], "--metrics-interval": ["0", "nan"],
    "--dcgm": ["not a url"], "--gpu-source": ["not a url"], "--log": ["{tmp}"], "--log-cmd": [""],
    "--runs": ["0"], "--concurrency": ["0"], "--requests-per-run": ["0"], "--max-new-tokens": ["0"],
    "--prompts": ["{tmp}/no-such.jsonl"], "--warmup": ["-1"], "--request-rate": ["0", "nan"], "--burstiness": ["0"],
    "--max-concurrency": ["0"], "--input-tokens": ["x", "0", "8:8"], "--output-tokens": ["x", "0", "4:9"],
    "--shared-prefix-tokens": ["-1"], "--prefix-groups": ["0"], "--sweep": ["bogus=1", "concurrency=", "concurrency=0"],
    "--slo": ["ttft_ms", "nope=1", "ttft_ms=x"], "--max-search-points": ["1"], "--ca-cert": ["{tmp}/no-such.pem"],
    "--proxy": ["ftp://127.0.0.1:1"], "--only": ["no-such-trial"], "--speed": ["0", "nan", "inf"],
    "--sim-speed": ["0", "nan"], "--isolate": ["no-such-trial"], "--interval": ["0", "61"],
    "--min-effect-pct": ["-1", "nan"], "-o": ["{tmp}/no/such/dir/out.md"], "--output": ["{tmp}/no/such/out.md"],
    "--html": ["{tmp}/no/such/out.html"], "--ledger": ["{tmp}"], "--ledger-md": ["{tmp}"], "--ledger-csv": ["{tmp}"],
    "--slurm-job": ["x y"],
    "--summary": ["{tmp}/no/such/dir/s.json"], "--trial": [""], "--name": [""], "--model": [""],
    "--metrics-host": ["no such host"], "--api-key": ["", "k\u00e9y", "a\nb"], "--log-dir": ["{tmp}/prompts.jsonl"], "gpus --sim": ["not a url"],
}
# Any text is a valid value: no bad value but argparse's own.
ANY_TEXT: set[str] = set()
# Refused where it is used, tested there: a headless job has no theme.
BAD_ELSEWHERE = {"--theme": "the dashboard refuses an unknown theme (tests/test_tui_themes.py)"}
# What an option needs beside it (per command where it differs).
NEEDS: dict[str, list[str]] = {
    "--log-from-start": ["--log", "{tmp}/server.log"], "--find-max-load": ["--slo", "ttft_ms=5000",
                                                                          "--max-search-points", "2"],
    "--max-search-points": ["--find-max-load", "--slo", "ttft_ms=5000"],
    "--shared-prefix-tokens": ["--input-tokens", "32"], "--prefix-groups": ["--input-tokens", "32"],
    "--burstiness": ["--request-rate", "50", "--requests-per-run", "2"],
    "--max-concurrency": ["--request-rate", "50", "--requests-per-run", "2"],
    "--request-rate": ["--requests-per-run", "2"], "--metrics-host": ["--metrics-port", "0"],
    "--isolate": ["--sim"], "--resume": ["--ledger", "{tmp}/ledger.json"],
}
# Options that need a service the suite does not start here; they are parsed and validated
# (the session would start next), and their own tests run them for real.
VALIDATE_ONLY = {
    "replay --follow": "a recording still being written (tests/test_record_follow_cli.py)",
    "replay --metrics-port": "a replay that serves /metrics runs until Ctrl-C (tests/test_metrics_endpoint.py)",
    "replay --metrics-host": "a replay that serves /metrics runs until Ctrl-C (tests/test_metrics_endpoint.py)",
}
# Options that need Slurm's controller: where none answers (this box, CI) the refusal is one
# line and exit 2; where one does, they run.
NEEDS_SLURM = {"--slurm", "--slurm-job"}
# A choice that needs a companion.
CHOICE_NEEDS = {("--telemetry", "dcgm"): ["--dcgm", "http://127.0.0.1:1/metrics"]}
# Commands whose every run is a campaign of launches: validated here, run by their own tests.
VALIDATE_COMMANDS = {"demo": "tests/test_demo_curves.py, tests/test_trials_sim.py",
                     "trials": "tests/test_trials_sim.py"}
# Options that are real even in a trials/demo call (they launch nothing).
REAL_IN_TRIALS = {"--check", "--dry-run"}
# Each launch starts a simulator (~2.5 s): launch's options run together, a few launches in
# all (every option and every choice in at least one; test_launch_groups_cover_every_option);
# each is also validated on its own.
LAUNCH_GROUPS = {
    "files-and-ui": ["--api", "auto", "--telemetry", "auto", "--record", "{tmp}/l1.jsonl", "--name", "n1",
                     "--model", "m1", "--no-preflight", "--ready-timeout", "60", "--theme", "dark",
                     "--screenshot-dir", "{tmp}", "--metrics-port", "0", "--metrics-host", "127.0.0.1",
                     "--concurrency", "2", "--requests-per-run", "2", "--prompts", "{tmp}/prompts.jsonl"],
    "open-loop-synthetic": ["--api", "generate", "--telemetry", "nvml", "--input-tokens", "32:4",
                            "--shared-prefix-tokens", "8", "--prefix-groups", "2", "--output-tokens", "24:4",
                            "--request-rate", "50", "--burstiness", "0.5", "--max-concurrency", "2",
                            "--requests-per-run", "2", "--log", "{tmp}/l3.log"],
    "sweep-slo": ["--api", "completions", "--telemetry", "sim", "--sweep", "concurrency=1,2",
                  "--slo", "ttft_ms=5000,tpot_ms=1000"],
    "search": ["--api", "chat", "--telemetry", "off", "--find-max-load", "--slo", "ttft_ms=5000",
               "--max-search-points", "2"],
}
LAUNCH_BASE = {"--headless", "--runs", "--max-new-tokens", "--warmup", "--telemetry", "--log"}


def table(d: dict, cmd: str, name: str, default=None):
    """The entry for ``CMD --option`` where one command's option differs, else ``--option``'s."""
    return d.get(f"{cmd} {name}", d.get(name, default))


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def option_name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings != ["-o", "--output"] else "--output"


ALL = [(cmd, option_name(a), a) for cmd, p in commands().items() for a in options(p)]
IDS = [f"{cmd} {name}" for cmd, name, _ in ALL]


def takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def argparse_bad(action: argparse.Action) -> list[str]:
    """Values argparse itself refuses."""
    if not takes_value(action):
        return []
    if action.choices:
        return ["no-such-choice"]
    if action.type in (int, float):
        return ["a-word"]
    return []


# ---------------------------------------------------------------- calling tuiapp


@contextlib.contextmanager
def session_stub(validate: bool):
    """validate: the session is not run (frontend.run returns 0); its metrics socket closed."""
    import tuiapp.commands.frontend as frontend

    if not validate:
        yield
        return
    real = frontend.run

    def stub(session, **_kw) -> int:
        endpoint = getattr(session, "metrics", None)
        if endpoint is not None and hasattr(endpoint, "close"):
            endpoint.close()
        return 0

    frontend.run = stub
    try:
        yield
    finally:
        frontend.run = real


def call(argv: list[str], *, validate: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), session_stub(validate):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    net_config.reset()
    return code, out.getvalue(), err.getvalue()


class World:
    """The files and servers the calls use."""

    def __init__(self, tmp: Path, url: str, sim_url: str, summaries: tuple[str, str]) -> None:
        self.tmp, self.url, self.sim_url, self.summaries = tmp, url, sim_url, summaries

    def fill(self, items: list[str]) -> list[str]:
        return [s.replace("{tmp}", str(self.tmp)).replace("{url}", self.url).replace("{sim}", self.sim_url)
                for s in items]

    def argv(self, cmd: str, opts: list[str], *, validate: bool) -> list[str]:
        """The command line: the option under test first, then the command's base."""
        opts = self.fill(opts)
        given = {o.split("=", 1)[0] for o in opts if o.startswith("-")}
        base = [("--headless", None), ("--runs", "1"), ("--max-new-tokens", "24"), ("--warmup", "0"),
                ("--telemetry", "off")]
        if cmd == "launch":
            base.append(("--log", str(self.tmp / "launch.log")))
        quick = [x for flag, value in base if flag not in given for x in (flag, value) if x is not None]
        if cmd == "attach":
            return ["attach", self.url, *opts, *quick]
        if cmd == "launch":
            return ["launch", *opts, *quick, "--", *sim_command(free_port())]
        if cmd == "logscan":
            return ["logscan", str(LOG), *opts]
        if cmd == "gpus":
            return ["gpus", *opts] if validate else ["gpus", "--sim", self.sim_url, "--interval", "0.05", *opts]
        if cmd in ("trials", "demo"):
            base = [str(PLAN), "--sim"] if cmd == "trials" else []
            return [cmd, *base, *opts, "--headless"]
        if cmd == "compare":
            return ["compare", *self.summaries, *opts]
        if cmd == "replay":  # validate: the dashboard's path, where the session would start
            return ["replay", str(RECORDING), *opts] + ([] if validate else ["--headless"])
        if cmd == "report":  # a copy: without -o the report is written beside its recording
            copy = self.tmp / RECORDING.name
            if not copy.exists():
                shutil.copyfile(RECORDING, copy)
            return ["report", str(copy), *opts]
        raise AssertionError(f"no base command line for {cmd!r}: add one")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("options")
    (tmp / "prompts.jsonl").write_text('{"prompt": "Say something."}\n{"prompt": "And more."}\n')
    server = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.testserver", "--port", "0", "--step-ms", "5",
                               "--prefill-ms", "2"], stdout=subprocess.PIPE, text=True)
    sim_port = free_port()
    sim = subprocess.Popen(sim_command(sim_port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = server.stdout.readline().split()[-1]
        w = World(tmp, url, f"http://127.0.0.1:{sim_port}", ("", ""))
        summaries = []
        for name in ("a", "b"):
            path = tmp / f"summary-{name}.json"
            code, _out, err = call(w.argv("attach", ["--runs", "2", "--summary", str(path)], validate=False),
                                   validate=False)
            assert code == 0, err
            summaries.append(str(path))
        w.summaries = tuple(summaries)
        _make_ca(tmp / "ca.pem")
        yield w
    finally:
        for proc in (server, sim):
            proc.terminate()
            proc.wait(10)


def _make_ca(path: Path) -> None:
    """A PEM bundle for --ca-cert to load: the one httpx itself trusts (certifi)."""
    import certifi

    path.write_bytes(Path(certifi.where()).read_bytes())


# ---------------------------------------------------------------- the tests


def test_every_option_has_values():
    missing = [f"{cmd} {name}" for cmd, name, a in ALL
               if takes_value(a) and not a.choices and table(GOOD, cmd, name) is None]
    assert missing == [], "give these options a good value in GOOD (and a bad one in BAD)"
    unjudged = [f"{cmd} {name}" for cmd, name, a in ALL
                if takes_value(a) and not a.choices and a.type not in (int, float)
                and table(BAD, cmd, name) is None and name not in ANY_TEXT and name not in BAD_ELSEWHERE]
    assert unjudged == [], "give these options a bad value in BAD (or list them in ANY_TEXT)"


def good_values(cmd: str, action: argparse.Action, name: str) -> list[str | None]:
    if action.choices:
        return list(action.choices)
    return table(GOOD, cmd, name) if takes_value(action) else [None]


def with_value(name: str, value: str | None) -> list[str]:
    if value is None:
        return [name]
    return [f"{name}={value}"] if value.startswith("-") else [name, value]


def needs(cmd: str, name: str) -> list[str]:
    extra = list(table(NEEDS, cmd, name, []))
    if cmd == "trials" and name == "--isolate":
        return []  # the base is --sim already
    if cmd == "replay" and name == "--summary":
        return []  # the base is --headless already
    if cmd == "gpus" and name in ("--sim", "--json"):
        return []
    return extra


@pytest.mark.parametrize(("cmd", "name", "action"), ALL, ids=IDS)
def test_every_option_runs(world, cmd, name, action):
    real = ((cmd not in VALIDATE_COMMANDS or name in REAL_IN_TRIALS) and f"{cmd} {name}" not in VALIDATE_ONLY
            and cmd != "launch")  # launch's run in LAUNCH_GROUPS
    for value in good_values(cmd, action, name):
        opts = [*with_value(name, value), *needs(cmd, name), *CHOICE_NEEDS.get((name, value), [])]
        if cmd == "gpus" and name == "--gpu-source":
            # no dcgm-exporter answers: the snapshot has no GPU, one line, exit 1
            code, out, err = call(["gpus", *world.fill(opts)], validate=False)
            assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            continue
        argv = world.argv(cmd, opts, validate=not real)
        code, out, err = call(argv, validate=not real)
        if name in NEEDS_SLURM and code == 2:
            assert len(err.strip().splitlines()) == 1 and "Slurm" in err or "scontrol" in err, err
            continue
        assert code == 0, f"{' '.join(argv)}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
        assert "Traceback" not in err


@pytest.mark.parametrize(("cmd", "name", "action"), ALL, ids=IDS)
def test_every_bad_value_is_one_line_and_exit_2(world, cmd, name, action):
    bads = argparse_bad(action) + (table(BAD, cmd, name, []) if takes_value(action) else [])
    if not takes_value(action):
        bads = ["=x"]  # a value given to a flag
    if not bads:
        assert name in ANY_TEXT or name in BAD_ELSEWHERE or action.choices
        return
    for bad in bads:
        opts = [name + bad] if bad == "=x" else with_value(name, bad)
        argv = world.argv(cmd, [*opts, *needs(cmd, name)], validate=True)
        code, _out, err = call(argv, validate=True)
        assert code == 2, f"{' '.join(argv)} -> {code}\n{err[-2000:]}"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tuiapp"), f"{' '.join(argv)}:\n{err}"


VALUED = [(cmd, name, a) for cmd, name, a in ALL if takes_value(a)]
TEXT = st.one_of(st.text(max_size=12), st.integers(-10**6, 10**6).map(str),
                 st.floats(allow_nan=True, allow_infinity=True).map(repr), st.sampled_from(["", " ", "-", "=", ":"]))
# values that would make a valid call long (a search of 10**6 probes, an hour's timeout)
NUMERIC_CAP = {"--runs", "--concurrency", "--requests-per-run", "--max-new-tokens", "--warmup", "--max-concurrency",
               "--max-search-points", "--interval", "--prefix-groups", "--shared-prefix-tokens", "--input-tokens",
               "--output-tokens", "--request-rate"}


@settings(max_examples=100, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.slow
def test_no_value_gives_a_traceback(world, data):
    cmd, name, action = data.draw(st.sampled_from(VALUED), label="option")
    value = data.draw(st.sampled_from(list(action.choices)) | TEXT if action.choices else TEXT, label="value")
    if name in NUMERIC_CAP and _number(value) is not None and abs(_number(value)) > 64:
        value = "64"
    opts = [f"{name}={value}", *needs(cmd, name)]
    cwd = os.getcwd()
    os.chdir(world.tmp)  # a drawn path lands here
    try:
        code, _out, err = call(world.argv(cmd, opts, validate=True), validate=True)
    finally:
        os.chdir(cwd)
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def test_output_tokens_runs_with_max_new_tokens(world):
    """The option whose traceback issue 40 found, beside the one it overrides (launch's run is
    in LAUNCH_GROUPS["open-loop-synthetic"])."""
    code, out, err = call(world.argv("attach", ["--output-tokens", "24:4", "--max-new-tokens", "64"], validate=False),
                          validate=False)
    assert code == 0, err
    assert " run " in out


def test_summary_of_the_option_runs_is_json(world):
    assert all(json.loads(Path(p).read_text())["runs"] for p in world.summaries)


def test_launch_groups_cover_every_option():
    launch = commands()["launch"]
    used = {(g[i], g[i + 1] if i + 1 < len(g) else None) for g in LAUNCH_GROUPS.values() for i in range(len(g))}
    names = {n for n, _ in used} | LAUNCH_BASE
    for action in options(launch):
        assert option_name(action) in names, f"launch {option_name(action)}: put it in a LAUNCH_GROUPS group"
        for choice in action.choices or ():
            assert (option_name(action), choice) in used, f"launch {option_name(action)} {choice}: in no group"


@pytest.mark.parametrize("group", list(LAUNCH_GROUPS))
@pytest.mark.slow
def test_launch_options_run_together(world, group):
    argv = world.argv("launch", LAUNCH_GROUPS[group], validate=False)
    code, out, err = call(argv, validate=False)
    assert code == 0, f"{' '.join(argv)}\nstdout: {out[-2500:]}\nstderr: {err[-2000:]}"
    assert " run " in out and "Traceback" not in err

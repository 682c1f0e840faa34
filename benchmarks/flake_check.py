"""Flake check: run the tests that wait on real processes (servers starting, ptys closing, faults
firing) several times each, in fresh pytest processes, and print how often each one passed.

A test that races a process's timing fails once in a few runs; one run of the suite rarely shows
it, five runs of that test usually do. Exit code 1 when any run failed.

    .venv/bin/python benchmarks/flake_check.py                      # the default list, 5 runs each
    .venv/bin/python benchmarks/flake_check.py --runs 10 tests/test_sim_failures.py::test_dp_attention_prefixes_and_too_few_gpus
    .venv/bin/python benchmarks/flake_check.py --slowest 8 tests/  # the 8 slowest tests of a first run
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

# Tests that start a server or a TUI and wait on its timing: where flakes live.
DEFAULT_TESTS = [
    "tests/test_sim_failures.py::test_dp_attention_prefixes_and_too_few_gpus",
    "tests/test_tui_hangup.py",
    "tests/test_cli_failures.py::test_headless_job_survives_its_terminal_and_exits_with_its_result",
    "tests/test_server_sim_e2e.py",
    "tests/test_server_parent_death.py",
    "tests/test_record_kill9.py",
]


def pytest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *args]  # one test: no workers


def slowest(paths: list[str], k: int) -> list[str]:
    out = subprocess.run(pytest_cmd(f"--durations={k}", "--durations-min=0", *paths),
                         capture_output=True, text=True).stdout
    found = re.findall(r"^\s*[\d.]+s (?:call|setup)\s+(\S+)$", out, re.MULTILINE)
    return list(dict.fromkeys(found))[:k]


def _why(out: str) -> list[str]:
    """The first assertion or error line of a failed run, else its last line."""
    lines = out.strip().splitlines()
    first_e = next((ln for ln in lines if ln.startswith("E ")), None)
    return [first_e.strip()[:200]] if first_e else (lines[-1:] or [""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", help=f"test ids or files (default: {len(DEFAULT_TESTS)} process-timing tests)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slowest", type=int, metavar="K", help="run the given paths once, then check their K slowest")
    parser.add_argument("--timeout-s", type=float, default=600)
    args = parser.parse_args()

    tests = args.tests or DEFAULT_TESTS
    if args.slowest:
        tests = slowest(tests, args.slowest)
        print(f"slowest {len(tests)}: {' '.join(tests)}")
    failed_any = False
    for test in tests:
        passes, walls, failures = 0, [], []
        for i in range(args.runs):
            t0 = time.monotonic()
            try:
                proc = subprocess.run(pytest_cmd("-x", test), capture_output=True, text=True, timeout=args.timeout_s)
                ok, tail = proc.returncode == 0, _why(proc.stdout)
            except subprocess.TimeoutExpired:
                ok, tail = False, [f"timed out after {args.timeout_s:g} s"]
            walls.append(time.monotonic() - t0)
            passes += ok
            if not ok:
                failures.append(f"run {i + 1}: {tail[0]}")
        failed_any |= passes < args.runs
        print(f"{passes}/{args.runs} passed  {sum(walls) / len(walls):6.1f} s/run  {test}", flush=True)
        for line in failures:
            print(f"    {line}")
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())

"""trials --slurm against a real Slurm (issue 42): Debian's slurmctld and two slurmd on this
host (nodes n1 and n2, 8 fake GPUs each, loopback only), the simulator as the server.

The tier: ``TUIAPP_SLURM="$(tools/slurm/setup.sh)" pytest -n 0 -m slurm`` (setup.sh installs
the packages and prints slurmctld's path). Off without the variable; with it, a cluster that
cannot start is a failure. Each module starts its own cluster (tools/slurm/cluster.sh) in a
temporary directory and stops it, so no daemon or job outlives the tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]
ENV = "TUIAPP_SLURM"
CLUSTER = Path(__file__).resolve().parents[1] / "tools" / "slurm" / "cluster.sh"


@pytest.fixture(scope="module")
def slurm_conf(tmp_path_factory):
    value = os.environ.get(ENV)
    if not value:
        pytest.skip(f"real Slurm tier off: set {ENV}=PATH (tools/slurm/setup.sh prints it)")
    if not Path(value).is_file():
        pytest.fail(f"{ENV}={value}: no such binary; run tools/slurm/setup.sh")
    home = tmp_path_factory.mktemp("slurm")
    done = subprocess.run([str(CLUSTER), "start", str(home)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"local Slurm did not start: {done.stderr.strip()[-2000:]}")
    conf = done.stdout.strip().splitlines()[-1]
    yield conf
    subprocess.run([str(CLUSTER), "stop", str(home)], capture_output=True, timeout=120)


def slurm_env(conf: str) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": conf}


def squeue(conf: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i %T %j"], env=slurm_env(conf), capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return [line for line in out.splitlines() if line.strip()]


def wait_empty_queue(conf: str, within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    left = squeue(conf)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = squeue(conf)
    return left


def node_dirs() -> set[Path]:
    """What jobs without a shared filesystem leave in the nodes' /tmp (here: this host's)."""
    return {p for p in Path("/tmp").glob("tuiapp-*") if p.name[7:8].isdigit()}


def remove_node_dirs(before: set[Path]) -> None:
    import shutil

    for path in node_dirs() - before:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def job_record(conf: str, job_id: str) -> dict[str, str]:
    from tuiapp.slurm.query import parse_key_values

    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=slurm_env(conf), capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return parse_key_values(out)


def run_trials(conf: str, plan: Path, tmp_path: Path, *extra: str, timeout_s: float = 240):
    return subprocess.run([sys.executable, "-m", "tuiapp", "trials", str(plan), "--slurm", "--sim", "--headless",
                           "--ledger", str(tmp_path / "ledger.json"), "--record", str(tmp_path / "rec.jsonl"), *extra],
                          env=slurm_env(conf), capture_output=True, text=True, timeout=timeout_s, cwd=tmp_path)


CAMPAIGN = """
[plan]
name = "slurm-campaign"

[slurm]
in_flight = 2
gpus_per_node = 8
time_limit = "00:05:00"

[baseline]
model = "Qwen/Qwen3-8B"
flags = {tp = 8}
bench = {runs = 3, max_new_tokens = 32}
timeouts = {ready_s = 90, run_s = 90}

[[trial]]
name = "tp16-2nodes"
flags = {tp = 16}
# the plan's own launcher: node 1 alone gets the fault
slurm = {nodes = 2, launcher = '{command} --nnodes {nnodes} --node-rank {node_rank} --dist-init-addr {dist_init_addr} --host {host} --port {port} $([ "$SLURM_NODEID" = 1 ] && echo --sim-fault assertion@1)'}

[[trial]]
name = "oom"
flags = {sim-fault = "oom@1"}

[[trial]]
name = "chunked"
flags = {chunked-prefill-size = 4096}
"""


def test_campaign_of_four_trials_two_in_flight(slurm_conf, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(CAMPAIGN)
    done = run_trials(slurm_conf, plan, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert wait_empty_queue(slurm_conf, 5) == []  # nothing queued or running afterwards

    rows = {r["name"]: r for r in json.loads((tmp_path / "ledger.json").read_text())}
    assert list(rows) == ["baseline", "tp16-2nodes", "oom", "chunked"]  # the plan's order
    ids = [r["slurm_job_id"] for r in rows.values()]
    assert all(ids) and len(set(ids)) == 4
    states = {name: r["slurm_state"] for name, r in rows.items()}
    assert states == {"baseline": "COMPLETED", "tp16-2nodes": "CANCELLED", "oom": "CANCELLED",
                      "chunked": "COMPLETED"}
    for name, row in rows.items():  # the ledger's word is Slurm's own
        record = job_record(slurm_conf, row["slurm_job_id"])
        assert record["JobState"] == row["slurm_state"], name
        assert row["slurm_queue_wait_s"] is not None and row["slurm_queue_wait_s"] >= 0
    assert rows["baseline"]["status"] == "ok" and rows["chunked"]["status"] == "ok"
    assert rows["chunked"]["verdict"] in ("faster", "slower", "within noise")

    # the 2-node trial: one process per node, its incident names both nodes and the ranks of each
    two = rows["tp16-2nodes"]
    assert two["slurm_nodes"] == ["n1", "n2"] and two["status"] == "assertion"
    events = [json.loads(line) for line in (tmp_path / "rec.jsonl").read_text().splitlines()[1:]]
    alerts = [e for e in events if e.get("kind") == "alert" and e.get("alert_kind") == "assertion"]
    # n2 (node rank 1) failed: the incident is n2's, its rank TP11 (global TP numbers)
    assert alerts and alerts[0]["nodes"] == ["n2"] and alerts[0]["ranks"] == [11]
    assert two["error_ranks"] == [11]
    ranks_logged = {e["tp_rank"] for e in events if e.get("kind") == "log" and e.get("tp_rank") is not None}
    assert set(range(16)) <= ranks_logged  # both nodes' logs were followed: TP0-7 on n1, TP8-15 on n2
    # GPUs per node: each node's agent (an extra srun step) wrote its samples back, named by node
    gpus = {(e["node"], e["index"]) for e in events if e.get("kind") == "gpu"}
    assert {node for node, _ in gpus} == {"n1", "n2"} and {i for _, i in gpus} == set(range(8))
    two_dir = next((tmp_path / "ledger.slurm").glob("tp16-2nodes-*"))
    assert all((two_dir / f"gpus-{node}.jsonl").stat().st_size > 0 for node in ("n1", "n2"))
    assert "cancelled by tuiapp: assertion" in two["slurm_reason"]

    # the OOM: cancelled within 5 s of its alert, by Slurm's own end time too
    oom = rows["oom"]
    assert oom["status"] == "oom" and oom["slurm_reason"].startswith("cancelled by tuiapp: oom on n")
    assert oom["slurm_cancel_after_alert_s"] < 5.0
    # two trials side by side: their watchers' alert ids never collide in the one stream
    oom_ids = {e["alert_id"] for e in events if e.get("kind") == "alert" and e.get("alert_kind") == "oom"}
    assert oom_ids and not oom_ids & {a["alert_id"] for a in alerts}
    alert_t_s = min(e["t_s"] for e in events if e.get("kind") == "alert" and e.get("alert_kind") == "oom")
    from tuiapp.slurm.query import parse_time

    end = parse_time(job_record(slurm_conf, oom["slurm_job_id"])["EndTime"]).timestamp()
    assert end - alert_t_s < 5.0 + 1.0  # Slurm stamps whole seconds

    # --resume: every trial has its row, so nothing is submitted again
    again = run_trials(slurm_conf, plan, tmp_path, "--resume")
    assert again.returncode == 0, again.stdout[-2000:]
    assert again.stdout.count("already in the ledger") == 4 and "sbatch" not in again.stdout
    assert [r["slurm_job_id"] for r in json.loads((tmp_path / "ledger.json").read_text())] == ids


MISBEHAVING = """
[slurm]
in_flight = 2
gpus_per_node = 8

[baseline]
model = "Qwen/Qwen3-8B"
flags = {tp = 8}
bench = {runs = 1000, max_new_tokens = 64}
timeouts = {ready_s = 60, run_s = 60}
# dies without a word 6 s after it starts: SIGKILL, as the kernel's OOM killer would
slurm = {launcher = 'timeout -s KILL 6 {command} --host {host} --port {port}'}

[[trial]]
name = "bad-flag"
flags = {no-such-flag = 1}
slurm = {launcher = '{command} --host {host} --port {port}'}
"""


def test_a_silent_death_and_a_refused_flag(slurm_conf, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(MISBEHAVING)
    done = run_trials(slurm_conf, plan, tmp_path)
    assert wait_empty_queue(slurm_conf, 5) == []
    rows = {r["name"]: r for r in json.loads((tmp_path / "ledger.json").read_text())}
    dead = rows["baseline"]
    assert dead["status"] == "crash" and dead["slurm_state"] == "FAILED", done.stdout[-3000:]
    assert dead["first_error"] == "server exited with code 137"  # Slurm's exit code of the job
    refused = rows["bad-flag"]  # preflight on this host: never submitted
    assert refused["status"] == "preflight" and refused["slurm_job_id"] is None
    assert "no-such-flag" in refused["first_error"]
    assert done.stdout.count("sbatch ") == 1


LONG = """
[slurm]
in_flight = 2
gpus_per_node = 8

[baseline]
model = "Qwen/Qwen3-8B"
flags = {tp = 8}
bench = {runs = 1000, max_new_tokens = 64}

[[trial]]
name = "b"
flags = {chunked-prefill-size = 4096}

[[trial]]
name = "c"
flags = {chunked-prefill-size = 2048}
"""


def _start(conf: str, plan: Path, tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tuiapp", "trials", str(plan), "--slurm", "--sim", "--headless",
                             "--ledger", str(tmp_path / "ledger.json")], env=slurm_env(conf), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _wait_running(conf: str, proc: subprocess.Popen, n: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sum(" RUNNING " in line for line in squeue(conf)) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"tuiapp ended early: {proc.stdout.read()[-3000:]}")
        time.sleep(0.3)
    pytest.fail(f"never {n} jobs running: {squeue(conf)}")


def test_ctrl_c_in_the_middle_leaves_no_job(slurm_conf, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(LONG)
    proc = _start(slurm_conf, plan, tmp_path)
    try:
        _wait_running(slurm_conf, proc, 2)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert wait_empty_queue(slurm_conf, 10) == [], out[-3000:]
    assert "Traceback" not in out
    # and the third trial, never submitted, is not in the ledger: --resume runs it
    rows = json.loads((tmp_path / "ledger.json").read_text()) if (tmp_path / "ledger.json").exists() else []
    assert "c" not in {r["name"] for r in rows}


@pytest.mark.parametrize("shared_fs", [True, False])
def test_attach_to_a_job_by_its_id(slurm_conf, tmp_path, shared_fs):
    """A job's head URL and node logs: from its directory, or (no shared filesystem) from its
    Comment and through srun."""
    before = node_dirs()
    plan = tmp_path / "plan.toml"
    plan.write_text(LONG if shared_fs else LONG.replace("in_flight = 2", "in_flight = 2\nshared_fs = false"))
    proc = _start(slurm_conf, plan, tmp_path)
    try:
        _wait_running(slurm_conf, proc, 1)
        job_id = next(line.split()[0] for line in squeue(slurm_conf) if " RUNNING " in line)
        done = subprocess.run([sys.executable, "-m", "tuiapp", "attach", "--slurm-job", job_id, "--headless",
                               "--runs", "2", "--record", str(tmp_path / "attach.jsonl")],
                              env=slurm_env(slurm_conf), capture_output=True, text=True, timeout=120)
        gone = subprocess.run([sys.executable, "-m", "tuiapp", "attach", "--slurm-job", "999999", "--headless"],
                              env=slurm_env(slurm_conf), capture_output=True, text=True, timeout=60)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        remove_node_dirs(before)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 runs" in done.stdout
    header = json.loads((tmp_path / "attach.jsonl").read_text().splitlines()[0])
    assert header["url"].startswith("http://127.0.0.1:")  # the head's address, from the job
    logged = [json.loads(line) for line in (tmp_path / "attach.jsonl").read_text().splitlines()[1:]]
    assert any(e.get("kind") == "log" for e in logged)  # its node's log, read from the job directory
    assert gone.returncode == 2 and "Invalid job id" in gone.stderr and "Traceback" not in gone.stderr
    assert wait_empty_queue(slurm_conf, 10) == []


def test_a_job_whose_tuiapp_was_killed_cancels_itself(slurm_conf, tmp_path):
    """SIGKILL leaves tuiapp no moment to scancel: the job sees its lease go quiet."""
    plan = tmp_path / "plan.toml"
    plan.write_text(LONG.replace("in_flight = 2", "in_flight = 2\nlease_s = 4"))
    proc = _start(slurm_conf, plan, tmp_path)
    try:
        _wait_running(slurm_conf, proc, 2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert len(squeue(slurm_conf)) == 2  # still there the moment tuiapp is gone
    assert wait_empty_queue(slurm_conf, 30) == []
    logs = "".join(p.read_text() for p in (tmp_path / "ledger.slurm").glob("*/batch.log"))
    assert logs.count("no word from the submitting tuiapp") == 2


@pytest.mark.pty
def test_the_dashboards_ssh_session_drops_and_no_job_is_left(slurm_conf, tmp_path):
    """The dashboard runs the campaign in a terminal that goes away (SIGHUP, then EIO): every
    job it submitted is cancelled before it exits."""
    import fcntl
    import select
    import termios

    plan = tmp_path / "plan.toml"
    plan.write_text(LONG)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x30\x00\xa0\x00\x00\x00\x00\x00")  # 48 rows, 160 columns

    def child_setup() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "tuiapp", "trials", str(plan), "--slurm", "--sim",
                             "--ledger", str(tmp_path / "ledger.json")],
                            env={**slurm_env(slurm_conf), "TERM": "xterm-256color"}, cwd=tmp_path,
                            stdin=slave, stdout=slave, stderr=slave, preexec_fn=child_setup)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen = (seen + os.read(master, 1 << 16))[-20000:]  # the dashboard paints: keep it drained
                except OSError:
                    break
            if sum(" RUNNING " in line for line in squeue(slurm_conf)) >= 2:
                break
            assert proc.poll() is None, seen.decode("utf-8", "replace")
        assert sum(" RUNNING " in line for line in squeue(slurm_conf)) == 2
        os.close(master)  # the SSH connection drops
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_empty_queue(slurm_conf, 10) == []
    assert code is not None and b"Traceback" not in seen


PREFLIGHT_JOB = """
[slurm]
in_flight = 2
gpus_per_node = 8
preflight = "job"

[baseline]
model = "Qwen/Qwen3-8B"
flags = {tp = 8}
bench = {runs = 2, max_new_tokens = 32}

[[trial]]
name = "bad-flag"
flags = {no-such-flag = 1}
"""


def test_preflight_as_a_short_job_on_a_node(slurm_conf, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PREFLIGHT_JOB)
    done = run_trials(slurm_conf, plan, tmp_path)
    rows = {r["name"]: r for r in json.loads((tmp_path / "ledger.json").read_text())}
    assert rows["baseline"]["status"] == "ok", done.stdout[-3000:]
    refused = rows["bad-flag"]
    assert refused["status"] == "preflight" and refused["slurm_job_id"] is None
    assert "--no-such-flag" in refused["first_error"]
    out = subprocess.run(["squeue", "-h", "-t", "all", "-n", "tuiapp-preflight", "-o", "%i %T"],
                         env=slurm_env(slurm_conf), capture_output=True, text=True, check=True).stdout.split("\n")
    ran = [line for line in out if line.strip()]
    assert ran and all(line.endswith(" COMPLETED") for line in ran)
    assert len(ran) == 1  # one --help for the campaign: both trials run the same launcher
    assert wait_empty_queue(slurm_conf, 5) == []


NO_SHARED_FS = """
[slurm]
in_flight = 2
gpus_per_node = 8
shared_fs = false

[baseline]
model = "Qwen/Qwen3-8B"
flags = {tp = 8}
bench = {runs = 3, max_new_tokens = 32}
timeouts = {ready_s = 90, run_s = 90}

[[trial]]
name = "tp16-2nodes"
flags = {tp = 16}
slurm = {nodes = 2, launcher = '{command} --nnodes {nnodes} --node-rank {node_rank} --dist-init-addr {dist_init_addr} --host {host} --port {port} $([ "$SLURM_NODEID" = 1 ] && echo --sim-fault oom@1)'}
"""


def test_without_a_shared_filesystem(slurm_conf, tmp_path):
    """Each node keeps its files in its own /tmp/tuiapp-JOB: logs come through `srun --overlap
    tail -F`, the endpoint through the job's Comment, the clean end through a signal."""
    before = node_dirs()
    plan = tmp_path / "plan.toml"
    plan.write_text(NO_SHARED_FS)
    done = run_trials(slurm_conf, plan, tmp_path)
    rows = {r["name"]: r for r in json.loads((tmp_path / "ledger.json").read_text())}
    try:
        assert wait_empty_queue(slurm_conf, 5) == []
        base, two = rows["baseline"], rows["tp16-2nodes"]
        assert base["status"] == "ok" and base["slurm_state"] == "COMPLETED", done.stdout[-3000:]
        assert two["status"] == "oom" and two["slurm_state"] == "CANCELLED" and two["error_ranks"] == [11]
        assert two["slurm_reason"].startswith("cancelled by tuiapp: oom on n2")
        assert not list((tmp_path / "ledger.slurm").glob("*/node-*.log"))  # nothing came through the job dir
        events = [json.loads(line) for line in (tmp_path / "rec.jsonl").read_text().splitlines()[1:]]
        ranks_logged = {e["tp_rank"] for e in events if e.get("kind") == "log" and e.get("tp_rank") is not None}
        assert set(range(16)) <= ranks_logged  # both nodes' logs, through srun
    finally:
        remove_node_dirs(before)


STOPPED_NOISILY = """
[slurm]
gpus_per_node = 8

[baseline]
name = "noisy-stop"
# never ready; scancel's SIGTERM makes it die with a traceback (an import the signal cut short)
command = "{python} {fake} --ready-after 600 --no-ready-line --stop-error"
timeouts = {{ready_s = 4, run_s = 60}}
"""


def test_what_a_job_prints_as_we_cancel_it_is_not_its_verdict(slurm_conf, tmp_path):
    fake = Path(__file__).parent / "data" / "server" / "fake_server.py"
    plan = tmp_path / "plan.toml"
    plan.write_text(STOPPED_NOISILY.format(python=sys.executable, fake=fake))
    done = subprocess.run([sys.executable, "-m", "tuiapp", "trials", str(plan), "--slurm", "--headless", "--telemetry",
                           "off", "--ledger", str(tmp_path / "ledger.json")],
                          env=slurm_env(slurm_conf), capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert wait_empty_queue(slurm_conf, 5) == []
    assert (tmp_path / "ledger.json").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    [row] = json.loads((tmp_path / "ledger.json").read_text())
    # the traceback was read (it stays in the row's alerts) but the trial timed out
    assert [a["kind"] for a in row["alerts"]] == ["keyerror"], done.stdout[-3000:]
    assert row["status"] == "timeout" and "ready timeout" in row["first_error"], (row["status"], row["first_error"])

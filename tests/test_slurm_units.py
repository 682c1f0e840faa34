"""The pure parts of trials --slurm (issue 42): the [slurm] table, a node's command line, the
batch script, and what sbatch, squeue, scontrol and sacct print (22.05 as Debian 12 ships it)."""

from __future__ import annotations

import datetime as dt
import shlex
import subprocess
from pathlib import Path

import pytest

from tuiapp.slurm.launcher import node_command, without_allocation_flags
from tuiapp.slurm.query import (
    SlurmError,
    expand_hostlist,
    parse_job_id,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue,
)
from tuiapp.slurm.script import JobFiles, batch_script, node_script, sbatch_options
from tuiapp.trials.plan import PlanError, parse_plan
from tuiapp.trials.slurm_spec import SlurmSpec

# ---------------------------------------------------------------- the node's command line


def test_allocation_flags_leave_the_command_in_every_spelling():
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--port", "30000", "--host=0.0.0.0",
            "--tp-size", "16", "--nnodes", "2", "--node_rank=1", "--dist-init-addr", "h:5000", "--trust-remote-code"]
    assert without_allocation_flags(argv) == ["python", "-m", "sglang.launch_server", "--model-path", "m",
                                              "--tp-size", "16", "--trust-remote-code"]


def test_one_node_gets_host_and_port_from_the_allocation():
    line = node_command(["sglang", "serve", "--model-path", "a b", "--port", "1"], 1)
    assert line == "sglang serve --model-path 'a b' --host 0.0.0.0 --port \"$TUIAPP_PORT\""


def test_several_nodes_get_rank_and_head_filled_at_run_time():
    line = node_command(["sglang", "serve", "--tp", "16"], 2)
    assert line == ('sglang serve --tp 16 --nnodes "$TUIAPP_NNODES" --node-rank "$SLURM_NODEID" '
                    '--dist-init-addr "$TUIAPP_HEAD_ADDR:$TUIAPP_DIST_PORT" --host 0.0.0.0 --port "$TUIAPP_PORT"')
    # what bash makes of it on node 1 of 2
    env = {"TUIAPP_NNODES": "2", "SLURM_NODEID": "1", "TUIAPP_HEAD_ADDR": "10.0.0.5", "TUIAPP_DIST_PORT": "5757",
           "TUIAPP_PORT": "30000", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", f"printf '%s\\n' {line.replace('sglang serve', '', 1)}"], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["--tp", "16", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.5:5757",
                   "--host", "0.0.0.0", "--port", "30000"]


def test_a_plans_own_launcher_template():
    line = node_command(["sglang", "serve", "--port", "9"], 2,
                        "numactl -i all {command} --nnodes {nnodes} --node-rank {node_rank} --port {port} # {node}")
    assert line.startswith("numactl -i all sglang serve --nnodes \"$TUIAPP_NNODES\" --node-rank \"$SLURM_NODEID\"")
    assert line.endswith('# "$SLURMD_NODENAME"')


# ---------------------------------------------------------------- the batch script


def _spec(**kw) -> SlurmSpec:
    return SlurmSpec.model_validate(kw)


def test_sbatch_options_from_the_table(tmp_path):
    files = JobFiles(tmp_path)
    spec = _spec(partition="gpu", account="acct", nodes=2, gpus_per_node=8, time_limit="00:30:00",
                 sbatch_options=["--exclusive", "--qos=high"])
    assert sbatch_options(spec, "tuiapp-x", files) == [
        "--job-name=tuiapp-x", "--nodes=2", "--ntasks-per-node=1", f"--output={tmp_path}/batch.log",
        "--gres=gpu:8", "--partition=gpu", "--account=acct", "--time=00:30:00", "--exclusive", "--qos=high"]


def test_batch_script_is_valid_bash_and_carries_env_options_and_the_watch(tmp_path):
    files = JobFiles(tmp_path / "job dir")
    script = batch_script(["sglang", "serve"], {"NCCL_ALGO": "Tree; rm -rf /"}, _spec(nodes=2, gpus_per_node=8),
                          files, job_name="tuiapp-t", agent_argv=["/usr/bin/python3", "-m", "tuiapp.slurm.gpu_agent"])
    (tmp_path / "job.sh").write_text(script)
    subprocess.run(["bash", "-n", str(tmp_path / "job.sh")], check=True)
    assert "#SBATCH --nodes=2" in script and "#SBATCH --gres=gpu:8" in script
    assert "export NCCL_ALGO='Tree; rm -rf /'" in script  # quoted: a value is never code
    assert "srun --ntasks-per-node=1 --kill-on-bad-exit=1" in script
    assert "srun --overlap" in script and "gpus-" in script
    assert 'if [ -e "$D/stop" ]' in script and "scancel" in script  # stop file and stale lease
    node = node_script(["sglang", "serve"], _spec(nodes=2), files)
    assert "node-\"$SLURMD_NODENAME\".log" in node and node.splitlines()[-1].startswith("exec sglang serve --nnodes")


def test_no_agent_step_without_an_agent(tmp_path):
    script = batch_script(["x"], {}, _spec(), JobFiles(tmp_path), job_name="j")
    assert "--overlap" not in script and "--gres" not in script


def test_batch_script_runs_its_allocation_part_in_bash(tmp_path):
    """The part before the step, under a fake scontrol/srun: endpoint.json says head, address,
    ports and nodes as the submitting tuiapp reads them."""
    import json

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        "#!/bin/bash\nif [ \"$2\" = hostnames ]; then printf 'n1\\nn2\\n'; "
        "else echo 'NodeName=n1 Arch=x86_64 NodeAddr=10.1.2.3 NodeHostName=vm'; fi\n")
    (bin_dir / "srun").write_text("#!/bin/bash\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    files = JobFiles(tmp_path / "job")
    files.dir.mkdir()
    files.script.write_text(batch_script(["x"], {}, _spec(nodes=2, port=31000), files, job_name="j"))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_ID": "77",
           "SLURM_JOB_NUM_NODES": "2"}
    done = subprocess.run(["bash", str(files.script)], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    endpoint = json.loads(files.endpoint.read_text())
    assert endpoint["job_id"] == "77" and endpoint["head"] == "n1" and endpoint["head_addr"] == "10.1.2.3"
    assert endpoint["port"] == 31000 and endpoint["nodes"] == ["n1", "n2"] and endpoint["dist_port"] > 0


# ---------------------------------------------------------------- what Slurm prints

SCONTROL = ("JobId=12 JobName=tuiapp-oom UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
            "Account=(null) QOS=(null) JobState=CANCELLED Reason=None Dependency=(null) Requeue=1 Restarts=0 "
            "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:04 TimeLimit=00:05:00 TimeMin=N/A "
            "SubmitTime=2026-12-07T09:20:42 EligibleTime=2026-12-07T09:20:42 AccrueTime=2026-12-07T09:20:42 "
            "StartTime=2026-12-07T09:20:44 EndTime=2026-12-07T09:20:48 Deadline=N/A Partition=debug "
            "NodeList=n[1-2] BatchHost=n1 NumNodes=2 Command=/tmp/j/job.sh WorkDir=/tmp "
            "StdErr=/tmp/j/batch.log StdIn=/dev/null StdOut=/tmp/j/batch.log Power= TresPerNode=gres:gpu:8")


def test_scontrol_job_record():
    info = parse_scontrol_job(SCONTROL)
    assert (info.job_id, info.state, info.nodes) == ("12", "CANCELLED", ["n1", "n2"])
    assert (info.exit_code, info.signal, info.reason, info.stdout) == (0, 15, None, "/tmp/j/batch.log")
    assert info.queue_wait_s == 2.0 and info.over and not info.running
    assert info.end == dt.datetime(2026, 12, 7, 9, 20, 48)


def test_scontrol_pending_and_garbage():
    info = parse_scontrol_job("JobId=3 JobState=PENDING Reason=Resources NodeList=(null) StartTime=Unknown "
                              "SubmitTime=2026-12-07T09:00:00")
    assert info.state == "PENDING" and info.reason == "Resources" and info.nodes == [] and info.queue_wait_s is None
    assert not info.over
    with pytest.raises(SlurmError):
        parse_scontrol_job("slurm_load_jobs error: Invalid job id specified")


def test_squeue_lines_of_every_state():
    text = ("12|RUNNING|n[1-2]|2026-12-07T09:20:42|2026-12-07T09:20:44|None\n"
            "13|PENDING||2026-12-07T09:20:43|2026-12-07T09:25:00|Resources\n"
            "14|CANCELLED|n1|2026-12-07T09:20:43|2026-12-07T09:20:45|None\n"
            "garbage\n")
    jobs = parse_squeue(text)
    assert set(jobs) == {"12", "13", "14"}
    assert jobs["12"].running and jobs["12"].nodes == ["n1", "n2"] and jobs["12"].queue_wait_s == 2.0
    assert jobs["13"].start is None and jobs["13"].reason == "Resources"  # an estimate is not a start
    assert jobs["14"].over


def test_sacct_picks_the_job_not_its_steps():
    text = ("15.batch|COMPLETED|n1|2026-12-07T09:00:00|2026-12-07T09:00:03|2026-12-07T09:01:00|0:0\n"
            "15|OUT_OF_MEMORY|n1|2026-12-07T09:00:00|2026-12-07T09:00:03|2026-12-07T09:01:00|0:125\n")
    info = parse_sacct(text, "15")
    assert info.state == "OUT_OF_MEMORY" and info.queue_wait_s == 3.0 and info.exit_code == 0
    assert parse_sacct("", "15") is None
    assert parse_sacct("16|CANCELLED by 0|n1|x|y|z|0:0\n", "16").state == "CANCELLED"


def test_sbatch_parsable_job_id():
    assert parse_job_id("42\n") == "42"
    assert parse_job_id("42;cluster\n") == "42"
    with pytest.raises(SlurmError):
        parse_job_id("sbatch: error: Batch job submission failed: Invalid account")


def test_hostlists():
    assert expand_hostlist("n[1-2],gpu[01-03,07],login") == ["n1", "n2", "gpu01", "gpu02", "gpu03", "gpu07", "login"]
    assert expand_hostlist("rack[1-2]-n[1-2]") == ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    assert expand_hostlist("(null)") == [] and expand_hostlist("") == []


# ---------------------------------------------------------------- the plan's tables

PLAN = """
[slurm]
partition = "gpu"
in_flight = 2
gpus_per_node = 8
time_limit = "00:30:00"

[baseline]
model = "m"

[[trial]]
name = "tp16"
flags = {tp = 16}
slurm = {nodes = 2}

[[trial]]
name = "tp16-ep"
base = "tp16"
flags = {ep = 16}
"""


def test_plan_slurm_table_and_per_trial_shape():
    plan = parse_plan(PLAN, Path("p.toml"))
    assert plan.slurm.partition == "gpu" and plan.slurm.in_flight == 2
    tp16, ep = plan.trials
    assert tp16.slurm == {"nodes": 2} and ep.slurm == {"nodes": 2}  # inherited from its base
    assert plan.slurm.for_trial(tp16.slurm).nodes == 2 and plan.slurm.for_trial(plan.baseline.slurm).nodes == 1
    assert plan.baseline.fingerprint() != tp16.fingerprint()


@pytest.mark.parametrize("table, message", [
    ('[slurm]\ntime_limit = "soon"', "p.toml:2: slurm.time_limit: 'soon' is not a Slurm time"),
    ('[slurm]\nsbatch_options = ["--output=x"]', "--output is set by tuiapp"),
    ('[slurm]\nlauncher = "srun {cmd}"', "unknown placeholder {cmd}"),
    ('[slurm]\nlauncher = "echo {node}"', "it must contain {command}"),
    ('[slurm]\nin_flight = 0', "slurm.in_flight"),
    ('[slurm]\nqueue = "x"', "slurm.queue: unknown field"),
    ('[slurm]\ndcgm = "host:9400"', "{node}"),
])
def test_bad_slurm_tables_are_one_line_errors(table, message):
    with pytest.raises(PlanError) as err:
        parse_plan(table + '\n[baseline]\nmodel = "m"\n', Path("p.toml"))
    assert message in str(err.value) and str(err.value).startswith("p.toml:")
    assert "\n" not in str(err.value)


def test_trials_slurm_without_slurm_is_a_usage_error(tmp_path, monkeypatch):
    from tuiapp.common.errors import UsageError
    from tuiapp.slurm.preflight import check_slurm

    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm client on this PATH
    with pytest.raises(UsageError, match="sbatch, squeue, scontrol, scancel not found"):
        check_slurm()


def test_sim_splits_ranks_over_nodes():
    from tuiapp.sim.logs import node_ranks, rank_tags

    tags = rank_tags(16, 1, 1, False)
    assert [t.tp for t in node_ranks(tags, 2, 1)] == list(range(8, 16))
    assert [t.tp for t in node_ranks(tags, 2, 0)] == list(range(8))
    assert node_ranks(tags, 1, 0) == tags


def test_quoting_helper_is_shlex():  # the node script quotes exactly as shlex does
    assert node_command(["a'b"], 1).startswith(shlex.quote("a'b"))


# ---------------------------------------------------------------- GPUs per node


async def test_gpu_samples_come_back_from_a_nodes_file_under_its_name(tmp_path):
    import asyncio

    from tuiapp.events import GpuSample
    from tuiapp.slurm.gpu_agent import follow_samples

    path = tmp_path / "gpus-n2.jsonl"
    got: list[GpuSample] = []
    task = asyncio.create_task(follow_samples(path, "n2", got.append, poll_s=0.01))
    await asyncio.sleep(0.05)  # the agent has not written yet: nothing, no error
    one = GpuSample(t_s=1.0, index=0, node="vm", mem_used_bytes=5, pcie_rx_bytes_s=1e9).model_dump_json()
    two = GpuSample(t_s=1.0, index=1, util_pct=50.0).model_dump_json()
    path.write_text(one + "\nnot json\n" + two[:10])  # a torn last line waits for its end
    for _ in range(100):
        await asyncio.sleep(0.01)
        if got:
            break
    with open(path, "a") as f:
        f.write(two[10:] + "\n")
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(got) == 2:
            break
    task.cancel()
    assert [(s.index, s.node) for s in got] == [(0, "n2"), (1, "n2")]  # the job's node name, not the host's
    assert got[0].pcie_rx_bytes_s == 1e9 and got[1].util_pct == 50.0


def test_gpu_agent_without_a_driver_says_so_and_fails():
    import sys

    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # a machine with NVIDIA GPUs: the agent samples them instead
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    done = subprocess.run([sys.executable, "-m", "tuiapp.slurm.gpu_agent", "--interval-s", "0.1"],
                          capture_output=True, text=True, timeout=60, env={"SLURMD_NODENAME": "n7", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1 and done.stderr.startswith("gpu_agent on n7: telemetry off:")


def test_dry_run_with_slurm_shows_each_jobs_shape(tmp_path, capsys):
    from tuiapp.cli import main

    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    assert main(["trials", str(plan), "--slurm", "--dry-run"]) == 0  # no Slurm needed to look
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "  sbatch --job-name=tuiapp-baseline --nodes=1 --ntasks-per-node=1 --gres=gpu:8 --partition=gpu --time=00:30:00"
    assert out[2] == '  each node: python -m sglang.launch_server --model-path m --host 0.0.0.0 --port "$TUIAPP_PORT"'
    assert out[4].startswith("  sbatch --job-name=tuiapp-tp16 --nodes=2 ")
    assert '--node-rank "$SLURM_NODEID"' in out[5]


def test_the_closing_report_lists_each_rows_job():
    from tuiapp.trials.campaign import slurm_job_lines
    from tuiapp.trials.ledger import Ledger, LedgerRow

    ledger = Ledger([LedgerRow(name="base", status="ok", is_baseline=True, slurm_job_id="3", slurm_state="COMPLETED",
                               slurm_nodes=["n1"], slurm_queue_wait_s=0.0),
                     LedgerRow(name="oom", status="oom", slurm_job_id="4", slurm_state="CANCELLED", slurm_nodes=["n2"],
                               slurm_queue_wait_s=2.0, slurm_reason="cancelled by tuiapp: oom on n2: CUDA out of memory"),
                     LedgerRow(name="refused", status="preflight")])
    assert slurm_job_lines(ledger) == [
        "Slurm jobs:", "  base: job 3 COMPLETED on n1, queued 0 s",
        "  oom: job 4 CANCELLED on n2, queued 2 s; cancelled by tuiapp: oom on n2: CUDA out of memory"]
    assert slurm_job_lines(Ledger([LedgerRow(name="local", status="ok")])) == []


def test_a_job_slurm_ended_without_a_word_takes_slurms_reason():
    from types import SimpleNamespace

    from tuiapp.slurm.query import JobInfo
    from tuiapp.slurm.runner import fill_slurm_fields
    from tuiapp.trials.ledger import LedgerRow

    def trial(state: str, **kw):
        info = JobInfo(job_id="9", state=state, nodes=["n1"], exit_code=0, signal=15, **kw)
        return SimpleNamespace(job_id="9", info=info, cancel_reason=None, fatal_s=None, cancelled_s=None,
                               submitted_s=10.0, first_token_s=None)

    row = LedgerRow(name="t", status="crash", first_error="server exited with code 0")
    fill_slurm_fields(row, trial("TIMEOUT", reason="TimeLimit"))
    assert (row.status, row.first_error, row.slurm_state) == ("timeout", "Slurm: TIMEOUT (TimeLimit)", "TIMEOUT")
    row = LedgerRow(name="t", status="crash", first_error="server exited with code 0")
    fill_slurm_fields(row, trial("NODE_FAIL"))
    assert (row.status, row.first_error) == ("crash", "Slurm: NODE_FAIL")
    row = LedgerRow(name="t", status="oom", first_error="CUDA out of memory")  # the log said why: kept
    fill_slurm_fields(row, trial("CANCELLED"))
    assert (row.status, row.first_error, row.slurm_nodes) == ("oom", "CUDA out of memory", ["n1"])


def test_a_simulated_non_head_node_serves_only_its_gpus():
    """--nnodes 2 --node-rank 1: no SGLang API (503, it never starts uvicorn), its 8 GPUs on
    --port + 1 for the node's GPU agent, and a clean exit on SIGTERM."""
    import signal
    import sys
    import time

    import httpx

    from tuiapp.server.ports import free_port

    port = free_port()
    while True:  # port + 1 must be free too
        try:
            httpx.get(f"http://127.0.0.1:{port + 1}/", timeout=0.2)
        except httpx.HTTPError:
            break
        port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tuiapp.sim.server", "--model-path", "Qwen/Qwen3-8B", "--tp", "16",
                             "--nnodes", "2", "--node-rank", "1", "--port", str(port), "--sim-speed", "50"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        body = None
        for _ in range(200):
            try:
                body = httpx.get(f"http://127.0.0.1:{port + 1}/sim/gpus", timeout=1).json()
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        assert body is not None and len(body["gpus"]) == 8
        assert httpx.get(f"http://127.0.0.1:{port + 1}/health", timeout=1).status_code == 503
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "TP8]" in err and "TP0]" not in err and "Uvicorn running" not in err

"""Preflight runs --help only on SGLang launchers it recognises, also inside wrappers; any other
program is never run for it (issue 35). Every stand-in notes each run, so "never run" is a fact."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from stand_ins import fake_sglang, runs_of, touching_script

from tuiapp.logwatch.verdict import worst_failure
from tuiapp.server import preflight as preflight_module
from tuiapp.server.launchers import Launcher, NotChecked, find_launcher, shell_commands
from tuiapp.server.preflight import preflight

PY = sys.executable
SGLANG = [PY, "-m", "sglang.launch_server"]


@pytest.fixture
def sglang(tmp_path, monkeypatch):
    """A stand-in SGLang 0.5.23 on PYTHONPATH; the help cache emptied."""
    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})
    root = fake_sglang(tmp_path / "site", profile="0.5.23")
    monkeypatch.setenv("PYTHONPATH", str(root))
    return root


@pytest.mark.parametrize("argv, help_command, flags, via", [
    (["sglang", "serve", "--tp", "8"], ["sglang", "serve"], ["--tp", "8"], ""),
    ([PY, "-u", "-m", "sglang.launch_server", "--tp", "8"], [PY, "-u", "-m", "sglang.launch_server"], ["--tp", "8"], ""),
    (["uv", "run", "--with", "x", "python", "-m", "sglang.launch_server", "--tp", "8"],
     ["uv", "run", "--with", "x", "python", "-m", "sglang.launch_server"], ["--tp", "8"], "uv run"),
    (["conda", "run", "-n", "sg", "--no-capture-output", "sglang", "serve", "--tp", "8"],
     ["conda", "run", "-n", "sg", "--no-capture-output", "sglang", "serve"], ["--tp", "8"], "conda run"),
    (["env", "-u", "X", "A=1", "sglang", "serve", "--tp", "1"], ["env", "-u", "X", "A=1", "sglang", "serve"],
     ["--tp", "1"], "env"),
    (["srun", "-N", "1", "--gres=gpu:8", "python3", "-m", "sglang.launch_server", "--tp", "8"],
     ["python3", "-m", "sglang.launch_server"], ["--tp", "8"], "srun"),
    ([PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "sglang.launch_server", "--tp", "2"],
     [PY, "-m", "sglang.launch_server"], ["--tp", "2"], "torchrun"),
    (["bash", "-lc", "export A=1; CUDA_VISIBLE_DEVICES=0,1 exec python3 -m sglang.launch_server --tp 2 \\\n"
      "  --port $PORT && echo done"], ["python3", "-m", "sglang.launch_server"], ["--tp", "2", "--port", "$PORT"],
     "bash -c"),
    (["docker", "run", "--gpus", "all", "--ipc=host", "-it", "--rm", "-p", "30000:30000", "-v", "/m:/m",
      "lmsysorg/sglang:v0.5.23-cu129", "python3", "-m", "sglang.launch_server", "--tp", "8"],
     ["docker", "run", "--rm", "lmsysorg/sglang:v0.5.23-cu129", "python3", "-m", "sglang.launch_server"],
     ["--tp", "8"], "docker run lmsysorg/sglang:v0.5.23-cu129"),
])
def test_recognised_launchers_and_wrappers(argv, help_command, flags, via):
    found = find_launcher(argv)
    assert isinstance(found, Launcher), found
    assert (found.help_command, found.flags, found.via) == (help_command, flags, via)


@pytest.mark.parametrize("argv, reason", [
    (["python3", "job.py", "--tp", "8"], "the Python script job.py is not an SGLang launcher"),
    (["python3", "-m", "vllm.entrypoints.openai.api_server"], "python -m vllm.entrypoints.openai.api_server"),
    (["vllm", "serve", "m"], "vllm is not an SGLang launcher"),
    (["torchrun", "--nproc-per-node=8", "train.py"], "torchrun runs the script train.py"),
    (["srun", "-N", "1", "python", "job.py"], "srun is not an SGLang launcher"),
    (["bash", "-c", "python job.py && echo ok"], "bash -c shows no SGLang launcher"),
    (["docker", "run", "--gpus", "all", "vllm/vllm-openai:latest", "--model", "m"], "not an SGLang image"),
    (["docker", "run", "lmsysorg/sglang:latest"], "the image's own entry point"),
    (["docker", "run", "lmsysorg/sglang:latest", "bash", "run.sh"], "runs bash, not an SGLang launcher"),
])
def test_other_commands_are_not_checked_and_say_why(argv, reason):
    found = find_launcher(argv)
    assert isinstance(found, NotChecked) and reason in found.reason, found


def test_shell_text_is_split_into_commands():
    text = "#!/bin/bash\nset -e  # strict\nexport X=1\nA=1 B=2 nohup python -m sglang.launch_server \\\n  --tp 8 | tee log\n"
    assert shell_commands(text) == [["set", "-e"], ["export", "X=1"],
                                    ["python", "-m", "sglang.launch_server", "--tp", "8"], ["tee", "log"]]


def _never_ran(marker) -> bool:
    return not marker.exists()


def test_a_plain_python_job_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    job = touching_script(tmp_path / "job.py", marker)
    (p,) = preflight(["python3", str(job), "--tp", "8"])
    assert p.severity == "note" and p.message.startswith("preflight skipped: the Python script") and "job.py" in p.message
    assert _never_ran(marker)


@pytest.mark.parametrize("wrap", [
    lambda job: ["bash", "-c", f"python3 {job} --tp 8"],
    lambda job: ["srun", "-N", "1", "python3", str(job)],
    lambda job: ["torchrun", "--nproc-per-node", "8", str(job)],
    lambda job: ["env", "A=1", "python3", str(job)],
    lambda job: ["docker", "run", "--rm", "pytorch/pytorch", "python3", str(job)],
])
def test_no_wrapper_of_a_plain_job_is_run(tmp_path, wrap):
    marker = tmp_path / "ran"
    job = touching_script(tmp_path / "job.py", marker)
    (p,) = preflight(wrap(job))
    assert p.severity == "note" and "preflight skipped" in p.message
    assert _never_ran(marker)


def test_a_shell_script_is_read_never_run(tmp_path, sglang):
    marker = tmp_path / "ran"
    script = tmp_path / "serve.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexec {PY} -m sglang.launch_server --model-path m \\\n"
                      "  --mem-fracton-static 0.8 \"$@\"\n")
    script.chmod(0o755)
    problems = preflight([str(script), "--tp", "8"])
    assert [(p.flag, p.suggestion) for p in problems] == [("--mem-fracton-static", "--mem-fraction-static")]
    assert _never_ran(marker) and runs_of(sglang) == ["--help"]
    plain = touching_script(tmp_path / "job.sh", marker, shell=True)
    (p,) = preflight(["bash", str(plain)])
    assert p.severity == "note" and "job.sh shows no SGLang launcher" in p.message and _never_ran(marker)


def test_srun_and_bash_c_check_the_sglang_command_inside_without_running_the_wrapper(tmp_path, sglang, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "srun-ran"
    touching_script(bin_dir / "srun", marker, shell=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    problems = preflight(["srun", "-N", "1", PY, "-m", "sglang.launch_server", "--model-path", "m", "--tp-sise", "8"])
    assert [(p.flag, p.suggestion) for p in problems] == [("--tp-sise", "--tp-size")]
    assert _never_ran(marker)
    assert preflight(["bash", "-c", f"touch {marker}; {PY} -m sglang.launch_server --model m --tp 8"]) == []
    assert _never_ran(marker) and runs_of(sglang) == ["--help"]  # one --help: the cache


def test_docker_runs_only_the_images_launcher_with_help(tmp_path, sglang, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "docker-calls"
    # a stand-in docker: notes its argv, then runs the container's command here
    (bin_dir / "docker").write_text(
        f"#!/bin/sh\necho \"$@\" >> {calls}\nshift 3\nshift 1\nexec {PY} \"$@\"\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    problems = preflight(["docker", "run", "--gpus", "all", "--shm-size", "32g", "lmsysorg/sglang:v0.5.23",
                          "python3", "-m", "sglang.launch_server", "--model-path", "m", "--cuda-graph-max-bs", "8"])
    assert [(p.flag, p.suggestion) for p in problems] == [("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode")]
    assert calls.read_text().split() == ["run", "--rm", "lmsysorg/sglang:v0.5.23", "python3", "-m",
                                         "sglang.launch_server", "--help"]


OOM_TRACEBACK = """Traceback (most recent call last):
  File "/sgl/python/sglang/launch_server.py", line 7, in <module>
    torch.empty(1 << 40, device="cuda")
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 GiB. GPU 0 has a total capacity of 139.80 GiB
"""


@pytest.mark.parametrize("output, kind, says", [
    (OOM_TRACEBACK, "oom", "torch.OutOfMemoryError: CUDA out of memory"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nAssertionError: world size mismatch\n",
     "assertion", "AssertionError: world size mismatch"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nImportError: cannot import name 'fused_moe'"
     " from 'sgl_kernel'\n", "error", "ImportError: cannot import name 'fused_moe'"),
])
def test_a_help_that_died_of_a_known_failure_is_that_failure(tmp_path, monkeypatch, output, kind, says):
    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})
    monkeypatch.setenv("PYTHONPATH", str(fake_sglang(tmp_path, output=output, code=1)))
    (p,) = preflight([*SGLANG, "--tp", "8"], classify=worst_failure)
    assert (p.severity, p.kind) == ("error", kind) and says in p.message
    assert "is SGLang installed" not in (p.suggestion or "")


def _launch(tmp_path, *server, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "tuiapp", "launch", "--headless", "--runs", "1", "--telemetry", "off", "--ready-timeout", "20",
         "--log", str(tmp_path / "server.log"), "--", *server],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def test_launch_of_a_python_script_never_runs_it_before_the_launch(tmp_path):
    runs = tmp_path / "runs"
    job = tmp_path / "job.py"
    # the "server": notes each run with its arguments, then dies as a job that ran out of memory
    job.write_text(f"import pathlib, sys\npathlib.Path({str(runs)!r}).open('a').write(repr(sys.argv[1:]) + '\\n')\n"
                   "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 GiB', flush=True)\n"
                   "sys.exit(1)\n")
    out = _launch(tmp_path, PY, str(job), "--steps", "10")
    assert runs.read_text().splitlines() == ["['--steps', '10']"], out.stdout  # once: the launch, no --help
    assert f"preflight skipped: the Python script {job} is not an SGLang launcher" in out.stdout, out.stdout
    assert "is SGLang installed" not in out.stdout + out.stderr
    assert out.returncode == 1 and "oom" in out.stdout


def test_launch_reports_a_help_that_ran_out_of_memory_as_oom(tmp_path):
    site = fake_sglang(tmp_path / "site", output=OOM_TRACEBACK, code=1)
    out = _launch(tmp_path, PY, "-m", "sglang.launch_server", "--model-path", "m", env={"PYTHONPATH": str(site)})
    assert out.returncode == 1, out.stdout + out.stderr
    assert "result" in out.stdout and " oom" in out.stdout, out.stdout
    assert "is SGLang installed" not in out.stdout + out.stderr
    assert runs_of(site) == ["--help"]  # refused at preflight: never launched


@pytest.mark.parametrize("argv, help_command, flags, remote", [
    (["ssh", "-p", "2222", "-tt", "gpu1", "python3", "-m", "sglang.launch_server", "--tp", "8"],
     ["ssh", "-o", "BatchMode=yes", "-p", "2222", "-tt", "gpu1", "python3 -m sglang.launch_server"], ["--tp", "8"],
     "ssh gpu1"),
    (["ssh", "gpu1", "cd /srv && CUDA_VISIBLE_DEVICES=0,1 sglang serve --tp 2 --model-path '/m x'"],
     ["ssh", "-o", "BatchMode=yes", "gpu1", "sglang serve"], ["--tp", "2", "--model-path", "/m x"], "ssh gpu1"),
    (["docker", "exec", "-it", "-e", "A=1", "-w", "/srv", "sgl", "python3", "-m", "sglang.launch_server", "--tp", "8"],
     ["docker", "exec", "-e", "A=1", "-w", "/srv", "sgl", "python3", "-m", "sglang.launch_server"], ["--tp", "8"],
     "docker exec sgl"),
    (["docker", "exec", "-d", "sgl", "bash", "-lc", "python3 -m sglang.launch_server --tp 8"],
     ["docker", "exec", "sgl", "python3", "-m", "sglang.launch_server"], ["--tp", "8"], "docker exec sgl"),
    (["kubectl", "-n", "ml", "exec", "-it", "pod-0", "-c", "srv", "--", "sglang", "serve", "--tp", "8"],
     ["kubectl", "-n", "ml", "exec", "pod-0", "-c", "srv", "--", "sglang", "serve"], ["--tp", "8"],
     "kubectl exec pod-0"),
])
def test_remote_and_container_launchers_are_read_and_checked_through_their_wrapper(argv, help_command, flags,
                                                                                    remote):
    found = find_launcher(argv)
    assert isinstance(found, Launcher), found
    assert (found.help_command, found.flags, found.remote) == (help_command, flags, remote)


@pytest.mark.parametrize("argv, reason", [
    (["ssh", "gpu1"], "runs a login shell"),
    (["ssh", "gpu1", "python3", "job.py"], "ssh gpu1 shows no SGLang launcher"),
    (["kubectl", "exec", "pod-0", "--", "./serve.sh"], "runs serve.sh, which cannot be read from here"),
    (["docker", "exec", "sgl", "bash", "serve.sh"], "runs the script serve.sh over there"),
    (["kubectl", "exec", "pod-0", "--", "torchrun", "-m", "sglang.launch_server"], "runs torchrun"),
])
def test_remote_commands_that_cannot_be_read_here_are_not_checked(argv, reason):
    found = find_launcher(argv)
    assert isinstance(found, NotChecked) and reason in found.reason, found


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """Stand-in ssh, docker and kubectl that note their argv and answer --help from an SGLang that
    exists only "over there"; the local SGLang is a job that touches a marker if ever run."""
    monkeypatch.setattr(preflight_module, "_HELP_CACHE", {})
    there = fake_sglang(tmp_path / "there", profile="0.5.23")
    here = tmp_path / "here"
    marker = tmp_path / "ran-here"
    fake_sglang(here, source=f"pathlib.Path({str(marker)!r}).touch()\n")
    monkeypatch.setenv("PYTHONPATH", str(here))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for tool in ("ssh", "docker", "kubectl"):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho {tool} \"$@\" >> {calls}\n"
                                    f"PYTHONPATH={there} exec {PY} -m sglang.launch_server --help\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls, marker, there


@pytest.mark.parametrize("wrapper", [["ssh", "gpu1"], ["docker", "exec", "-it", "sgl"],
                                     ["kubectl", "exec", "-it", "pod-0", "--"]])
def test_a_remote_launch_is_checked_against_the_sglang_over_there_never_the_local_one(remote, wrapper):
    calls, marker, there = remote
    problems = preflight([*wrapper, PY, "-m", "sglang.launch_server", "--model-path", "m", "--tp-sise", "8"])
    assert [(p.flag, p.suggestion) for p in problems] == [("--tp-sise", "--tp-size")]
    assert not marker.exists() and runs_of(there) == ["--help"]
    (call,) = calls.read_text().splitlines()
    assert call.startswith(wrapper[0]) and call.endswith("sglang.launch_server --help") and " -it " not in call


def test_a_remote_help_that_fails_is_a_warning_never_is_sglang_installed(remote, tmp_path, monkeypatch):
    calls, marker, _ = remote
    (tmp_path / "bin" / "ssh").write_text("#!/bin/sh\necho 'ssh: connect to host gpu1 port 22: Connection refused'"
                                          " >&2\nexit 255\n")
    (p,) = preflight(["ssh", "gpu1", "python3", "-m", "sglang.launch_server", "--tp", "8"])
    assert p.severity == "warning" and "flags not checked through ssh gpu1" in p.message
    assert "Connection refused" in p.message and "is SGLang installed" not in str(p)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no ssh here at all
    (p,) = preflight(["ssh", "gpu1", "python3", "-m", "sglang.launch_server", "--tp", "8"])
    assert p.severity == "warning" and "cannot run 'ssh' here" in p.message and "is SGLang installed" not in str(p)
    assert not marker.exists()

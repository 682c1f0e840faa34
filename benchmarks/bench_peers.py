"""Shared plumbing for the bench_* scripts: servers in their own process, peer tools in theirs.

Peers live in separate virtual environments outside the repository (they pull 1.2-1.3 GB
each and pin their own versions of shared libraries):

    python3.11 -m venv /work/peers/aiperf-venv && /work/peers/aiperf-venv/bin/pip install aiperf==0.13.0
    python3.11 -m venv /work/peers/genai-venv && /work/peers/genai-venv/bin/pip install genai-bench==0.0.5

(override with AIPERF_VENV / GENAI_VENV). A missing venv makes the scripts skip that peer.
Peers need a tokenizer directory to synthesise prompts; one is trained locally (tiny BPE,
no hub access) on first use with the peer venv's ``tokenizers``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PEERS = Path(os.environ.get("PEERS_DIR", "/work/peers"))
AIPERF_VENV = Path(os.environ.get("AIPERF_VENV", PEERS / "aiperf-venv"))
GENAI_VENV = Path(os.environ.get("GENAI_VENV", PEERS / "genai-venv"))
TOKENIZER_DIR = Path(os.environ.get("PEER_TOKENIZER", PEERS / "tok"))
MODEL = "fake-model"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sim_available() -> bool:
    return (Path(__file__).resolve().parents[1] / "tuiapp" / "sim" / "server.py").exists()


@dataclass
class Server:
    proc: subprocess.Popen
    url: str

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_fake(step_ms: float, tokens_per_chunk: int, *, spec: bool = False, prefill_ms: float = 20.0,
               cpu: int | None = None) -> Server:
    port = free_port()
    cmd = [sys.executable, "-m", "tuiapp.sim.testserver", "--port", str(port), "--step-ms", str(step_ms),
           "--tokens-per-chunk", str(tokens_per_chunk), "--prefill-ms", str(prefill_ms)]
    if spec:
        cmd.append("--spec")
    if cpu is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()  # "listening on ..."
    return Server(proc, f"http://127.0.0.1:{port}")


SIM_MODEL = "/models/Kimi-K2.5"


def start_sim(flags: list[str], sim_speed: float = 50.0) -> Server:
    """The simulator; ``sim_speed`` compresses start-up only (decode pacing is never scaled)."""
    port = free_port()
    cmd = [sys.executable, "-m", "tuiapp.sim.server", "--port", str(port), "--sim-speed", str(sim_speed),
           "--model-path", SIM_MODEL, "--tp", "8", "--enable-metrics", *flags]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"simulator exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return Server(proc, url)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("simulator did not become ready")


def ensure_tokenizer() -> Path | None:
    """A local tokenizer dir for the peers (trained once with the aiperf venv's tokenizers)."""
    if (TOKENIZER_DIR / "tokenizer.json").exists():
        return TOKENIZER_DIR
    py = next((v / "bin" / "python" for v in (AIPERF_VENV, GENAI_VENV) if (v / "bin" / "python").exists()), None)
    if py is None:
        return None
    TOKENIZER_DIR.mkdir(parents=True, exist_ok=True)
    code = f"""
from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
import json
tok = Tokenizer(models.BPE(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
text = " ".join("the quick brown fox jumps over a lazy dog while the server streams tokens".split() * 200)
trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["[UNK]", "<s>", "</s>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator([text] * 20, trainer)
tok.save("{TOKENIZER_DIR}/tokenizer.json")
json.dump({{"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
           "unk_token": "[UNK]", "model_max_length": 100000}}, open("{TOKENIZER_DIR}/tokenizer_config.json", "w"))
"""
    subprocess.run([str(py), "-c", code], check=True, capture_output=True)
    return TOKENIZER_DIR


@dataclass
class PeerRun:
    ok: bool
    cpu_s: float
    wall_s: float
    result: dict
    note: str = ""


def run_measured(cmd: list[str], *, env: dict | None = None, cwd: Path | None = None, timeout_s: float = 600) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run a client process to completion; its CPU (with its children's) and wall seconds."""
    c0, t0 = children_cpu_s(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    return proc, children_cpu_s() - c0, time.perf_counter() - t0


def run_aiperf(url: str, out_dir: Path, *, concurrency: int, requests: int, output_tokens: int,
               input_tokens: int = 32, endpoint: str = "chat") -> PeerRun | None:
    exe = AIPERF_VENV / "bin" / "aiperf"
    tok = ensure_tokenizer()
    if not exe.exists() or tok is None:
        return None
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [str(exe), "profile", "-m", MODEL, "--url", url, "--endpoint-type", endpoint, "--streaming",
           "--concurrency", str(concurrency), "--request-count", str(requests),
           "--prompt-input-tokens-mean", str(input_tokens), "--prompt-output-tokens-mean", str(output_tokens),
           "--extra-inputs", "ignore_eos:true", "--tokenizer", str(tok), "--use-server-token-count",
           "--ui-type", "none", "--no-gpu-telemetry", "--no-server-metrics", "--output-artifact-dir", str(out_dir)]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    proc, cpu, wall = run_measured(cmd, env=env)
    path = out_dir / "profile_export_aiperf.json"
    if proc.returncode != 0 or not path.exists():
        return PeerRun(False, cpu, wall, {}, (proc.stderr or proc.stdout)[-400:])
    return PeerRun(True, cpu, wall, json.loads(path.read_text()))


def run_genai(url: str, out_dir: Path, *, concurrency: int, requests: int, output_tokens: int,
              input_tokens: int = 32) -> PeerRun | None:
    exe = GENAI_VENV / "bin" / "genai-bench"
    tok = ensure_tokenizer()
    if not exe.exists() or tok is None:
        return None
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    cmd = [str(exe), "benchmark", "--api-backend", "sglang", "--api-base", url, "--api-key", "dummy",
           "--api-model-name", MODEL, "--model-tokenizer", str(tok), "--task", "text-to-text",
           "--num-concurrency", str(concurrency), "--traffic-scenario", f"D({input_tokens},{output_tokens})",
           "--max-requests-per-run", str(requests), "--max-time-per-run", "10", "--server-engine", "SGLang",
           "--experiment-base-dir", str(out_dir), "--experiment-folder-name", "run"]
    env = {**os.environ, "ENABLE_UI": "false"}
    proc, cpu, wall = run_measured(cmd, env=env, cwd=out_dir)
    results = sorted((out_dir / "run").glob("*concurrency*.json")) if (out_dir / "run").exists() else []
    if proc.returncode != 0 or not results:
        return PeerRun(False, cpu, wall, {}, (proc.stderr or proc.stdout)[-400:])
    return PeerRun(True, cpu, wall, json.loads(results[-1].read_text()))

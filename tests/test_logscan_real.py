"""logscan on output of real programs (not written by us): failure texts of real PyTorch/NCCL on
an H200 (`PYTHONPATH=. python benchmarks/real_error_texts.py OUT` on the device machine made
them), and the real SGLang 0.5.23 CPU server's log of a run ended by SIGTERM
(/work/shared/data/sglang-0.5.23-cpu-samples/server.log): an orderly shutdown raises nothing."""

import json
from pathlib import Path

import pytest

from tuiapp.commands.logscan import scan_file

DATA = Path(__file__).parent / "data" / "logs_real"
CASES = sorted(p.stem for p in DATA.glob("*.log"))


@pytest.mark.parametrize("name", CASES)
def test_real_failure_text(name):
    expected = json.loads((DATA / f"{name}.expected.json").read_text())
    got = scan_file(str(DATA / f"{name}.log"))
    assert {k: got[k] for k in expected} == expected


def test_the_real_texts_are_what_we_expect():
    kinds = {name: [i["kind"] for i in json.loads((DATA / f"{name}.expected.json").read_text())["incidents"]]
             for name in CASES}
    assert kinds == {"real_nccl_duplicate_gpu_raw": ["nccl"], "real_torch_oom_raw": ["oom"],
                     "real_torch_oom_sglang": ["oom"], "real_cpu_0523_orderly_shutdown": []}
    sglang = json.loads((DATA / "real_torch_oom_sglang.expected.json").read_text())
    assert sglang["incidents"][0]["ranks"] == [0, 1]

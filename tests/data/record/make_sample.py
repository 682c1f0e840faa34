"""Regenerate campaign_2min.jsonl.gz: a deterministic synthetic recording (not the simulator).

    .venv/bin/python tests/data/record/make_sample.py

Two minutes of the reference campaign's event stream (tuiapp.sim.synthetic): 8 GPUs at
1 Hz, four trials of 30 s (baseline, eagle3, custom-ar-pcie, ep-flashinfer-a2a with an OOM
on all 8 ranks), fixed start time and host, so replays and snapshots are reproducible.
"""

from pathlib import Path

from tuiapp.events import GpuSample
from tuiapp.record.header import gpu_inventory
from tuiapp.record.recorder import Recorder
from tuiapp.sim.synthetic import campaign_events

START_T_S = 1_795_000_000.0
OUT = Path(__file__).with_name("campaign_2min.jsonl.gz")


def main() -> None:
    events = list(campaign_events(120, start_t_s=START_T_S))
    header = {
        "start_t_s": START_T_S, "host": "gpu-box-1", "title": "reference campaign (synthetic sample)",
        "gpus": gpu_inventory(e for e in events if isinstance(e, GpuSample)), "sglang_version": "0.5.6", "mode": "trials",
        "argv": ["tuiapp", "trials", "reference.toml", "--headless", "--record", "campaign.jsonl.gz"],
        "tool_version": "0.1.0",
    }
    with Recorder(OUT, header) as rec:
        for ev in events:
            rec.write(ev)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(events)} events)")


if __name__ == "__main__":
    main()

"""``tuiapp gpus``: a one-shot GPU snapshot for scripts and a quick look."""

from __future__ import annotations

import argparse

from tuiapp.common.numfmt import NA, mem, num, rate

HELP = "show each GPU's memory, utilisation, PCIe throughput, link, power and temperature once"

EPILOG = """\
Takes two samples --interval apart so PCIe rates are real averages, not guesses.
Units: memory in GiB/MiB (2^30, 2^20 bytes), rates in GB/s, MB/s, kB/s (10^9, 10^6, 10^3).
Sources: local GPUs through NVML (default); --sim URL for the simulator's GPUs;
--gpu-source URL (repeatable) for dcgm-exporter endpoints on other nodes, shown
with the local GPUs when NVML works here.

Exit status: 0 when at least one GPU was read; 1 when none could be (no driver,
no GPU, unreachable sources: the reason is printed as one line on stderr, and with
--json also as "note" on stdout); 2 for bad arguments.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--json", action="store_true", help="print one JSON object (for scripts)")
    parser.add_argument("--gpu-source", action="append", default=[], metavar="URL",
                        help="dcgm-exporter /metrics endpoint of another node (repeatable)")
    parser.add_argument("--sim", metavar="URL", help="read the simulator's GPUs from URL/sim/gpus")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S",
                        help="seconds between the two samples (default 1.0)")
    from tuiapp.commands.net_args import add_net_arguments

    add_net_arguments(parser)  # --gpu-source and --sim may be https or behind a proxy


def format_table(gpus: list) -> str:
    """Plain-text table, one row per GPU (n/a where NVML says NOT_SUPPORTED or it is lost)."""
    headers = ["GPU", "name", "mem used / total", "util", "PCIe TX", "PCIe RX", "method",
               "link", "power", "temp", "SM clock"]
    rows = []
    for g in gpus:
        where = f"{g.node}:{g.index}" if g.node else str(g.index)
        mem_text = f"{mem(g.mem_used_bytes)} / {mem(g.mem_total_bytes)}"
        link = NA
        if g.pcie_gen is not None and g.pcie_width is not None:
            link = f"gen{g.pcie_gen} x{g.pcie_width}"
            if g.pcie_gen_max and g.pcie_width_max:
                link += f" (max gen{g.pcie_gen_max} x{g.pcie_width_max})"
        rows.append([
            where, g.name or NA, mem_text, num(g.util_pct, ".0f", "%"),
            rate(g.pcie_tx_bytes_s), rate(g.pcie_rx_bytes_s),
            g.pcie_method or NA, link, num(g.power_w, ".0f", " W"), num(g.temp_c, ".0f", " C"),
            num(g.sm_clock_mhz, "", " MHz"),
        ])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def run(args: argparse.Namespace) -> int:
    import sys

    import orjson

    from tuiapp.common.errors import UsageError
    from tuiapp.telemetry import open_backend, take_snapshot

    if not 0.05 <= args.interval <= 60:
        raise UsageError("--interval must be between 0.05 and 60 seconds")
    if args.sim and args.gpu_source:
        raise UsageError("--sim and --gpu-source cannot be combined")
    from tuiapp.commands.net_args import check_url

    for url in [args.sim] * bool(args.sim) + args.gpu_source:
        check_url(url, "--sim" if url == args.sim else "--gpu-source", bare_host=True)
    from tuiapp.commands.net_args import apply_net_arguments

    apply_net_arguments(args)
    if args.sim:
        backend, note = open_backend("sim", sim_url=args.sim)
    else:
        backend, note = open_backend("auto", dcgm_urls=args.gpu_source or None)
    events = [] if backend is None else take_snapshot(backend, args.interval, close=True)
    gpus = [e for e in events if e.kind == "gpu"]
    if args.sim and backend is not None and not backend.reachable:
        # the live monitor shows an unreachable simulator's GPUs idle; a snapshot must not
        gpus, note = [], f"telemetry off: no simulator answers at {args.sim}"
    alerts = [e for e in events if e.kind == "alert"]
    notes = [note] + [e.text for e in events if e.kind == "note" and e.text != note]
    if args.json:
        doc = {"note": "; ".join(notes), "gpus": [g.model_dump(mode="json") for g in gpus],
               "alerts": [a.model_dump(mode="json") for a in alerts]}
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif gpus:
        print(format_table(gpus))
    for a in alerts:
        print(f"{a.severity}: {a.message}", file=sys.stderr)
    if not gpus:
        print(f"tuiapp gpus: {'; '.join(notes)}", file=sys.stderr)
        return 1
    if not args.json:  # what the source is, how PCIe is measured, what is off: on stderr
        for n in notes:
            print(n, file=sys.stderr)
    return 0

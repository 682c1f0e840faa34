"""tuiapp: a live monitor for tuning SGLang inference servers.

Sources -> event bus -> sinks.
  events.py      every bus event (frozen pydantic, ``kind`` discriminator): the contract
  bus.py         EventBus: one bounded queue per sink, a slow sink drops its oldest
  sim/           a stand-in for SGLang and its GPUs at the process and HTTP boundary
  server/        launch / attach / preflight / stop of an SGLang server
  logwatch/      server log -> LogLine, ServerStats, Alert
  bench/         the continuous benchmark loop (httpx streaming)
  telemetry/     NVML, simulated and dcgm-exporter GPU samplers, host sampler
  record/        recorder sink, replay source, headless printer, reports
  trials/        plan files, the trial runner and its ledger
  commands/      one module per CLI subcommand
  tui/           the only package that imports Textual
"""

__version__ = "0.1.0"

"""Recording, replay and reports: the recorder and printer sinks, the replay source.

  header.py    the versioned first line of a recording (secrets redacted)
  recorder.py  sink: events -> JSON Lines (optionally gzip), flushed every 0.5 s, mode 0600
  printer.py   sink: plain progress lines for a log file, and the run summary
  reading.py   a recording's line index (byte offsets and times), read lazily, tolerant
  replay.py    source: a recording back onto the bus with its timing; ReplayControls
  report.py    Markdown report (findings.py, markdown.py) with SVG charts (svg.py)
"""

from tuiapp.cli import entry

raise SystemExit(entry())

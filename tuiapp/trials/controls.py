"""LiveControls for a running plan: they act on the current trial's benchmark and server."""

from __future__ import annotations

from tuiapp.trials.runner import PlanRunner


class TrialsControls:
    owns_server = True

    def __init__(self, runner: PlanRunner) -> None:
        self.runner = runner

    def pause_bench(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.pause()

    def resume_bench(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.resume()

    def restart_trial(self) -> None:
        if self.runner.bench is not None:
            self.runner.bench.restart()

    def stop_server(self) -> None:
        """Skip the current trial (not recorded, so --resume runs it again)."""
        self.runner.stop_server()

"""A load tool of the tests' own (registered with harness.tools.register): each process sleeps SECONDS, using no CPU,
and says it answered its share of the requests in that time."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.tools import LoadSpec
from harness.tools.output import Errors, Measurement


class SleepingTool:
    name = binary = "sleeping-tool"
    threading = "one"
    version_args = ("--version",)
    install_hint = ""
    SECONDS = 1.0

    def completed(self, output_tail: bytes) -> int | None:
        return None

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        return [
            sys.executable,
            "-c",
            f"import time; time.sleep({self.SECONDS}); print({spec.requests}, {self.SECONDS})",
        ]

    def parse(self, output: str, scratch: Path) -> Measurement:
        requests, seconds = output.split()
        return Measurement(int(requests), Errors(), float(seconds), int(requests) / float(seconds))

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        return spec

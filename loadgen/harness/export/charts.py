"""The report's PNG charts (matplotlib, Agg backend: no display needed), drawn by several processes: req/s bars per
(scenario, run) with the nginx ceiling, latency percentiles and the server's CPU per request per scenario
(bar_charts.py); req/s and p99 against concurrency for a matrix scenario (weather), p99 against the offered rate and
each scenario's percentile spectrum (line_charts.py); the style they share in chart_style.py."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.basics.parallel import in_processes
from harness.export.bar_charts import cost_bars, latency_bars, rps_bars
from harness.export.line_charts import latency_spectrum, latency_steps, p99_matrix, rps_matrix
from harness.report.model import Model, slug

Job = tuple[str, Callable[..., Path | None], tuple[Any, ...]]  # (chart id, drawing function, its arguments)


def write(model: Model, folder: Path) -> dict[str, Path]:
    """Every chart of the run into folder; returns {chart id: path} (ids: '<group key>-rps', '<scenario>-rps-matrix'...).
    Drawn by as many processes as this process may use CPUs (harness.basics.parallel)."""
    jobs = _jobs(model, folder)
    drawn = in_processes([functools.partial(draw, *args) for _, draw, args in jobs])
    return {key: path for (key, _, _), path in zip(jobs, drawn) if path}


def _jobs(model: Model, folder: Path) -> list[Job]:
    """(chart id, drawing function, its arguments) for every chart of the run, in the report's order."""
    jobs: list[Job] = []
    for scenario in model.scenarios:
        if not scenario.is_stepped:
            jobs.append(
                (f"{scenario.name}-cost", cost_bars, (model, scenario, folder / f"{slug(scenario.name)}-cost.png"))
            )
        jobs.append(
            (
                f"{scenario.name}-spectrum",
                latency_spectrum,
                (model, scenario, folder / f"{slug(scenario.name)}-spectrum.png"),
            )
        )
        if scenario.is_stepped:
            jobs.append(
                (
                    f"{scenario.name}-latency-steps",
                    latency_steps,
                    (model, scenario, folder / f"{slug(scenario.name)}-latency-steps.png"),
                )
            )
            continue
        if scenario.is_matrix:
            for kind, draw in (("rps-matrix", rps_matrix), ("p99-matrix", p99_matrix)):
                key = f"{scenario.name}-{kind}"
                jobs.append((key, draw, (model, scenario, folder / f"{slug(scenario.name)}-{kind}.png")))
            continue
        for group in scenario.groups:
            for kind, draw_group in (("rps", rps_bars), ("latency", latency_bars)):
                key = f"{group.key}-{kind}"
                jobs.append((key, draw_group, (model, group, folder / f"{key}.png")))
    return jobs

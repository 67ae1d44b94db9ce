"""A run's files, from its results.json, one module per export (like hyperfine's exporters), each over the same
model (harness.report.model: groups, ranks, cells):
  report.html   html.py        one self-contained page: charts embedded, inline CSS, works opened from disk
  charts/*.png  charts.py      matplotlib (Agg)
  summary.md    markdown.py    the same tables in Markdown
  summary.csv   csv_export.py  one row per record
  versus.html   versus_page.py `make versus`'s own page (and versus.md): head ÷ base with intervals, rounds, footprints
Flags are evaluated again here (they are a function of the data), so an older results.json reports with today's rules;
results.json itself is not rewritten."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.basics.messages import warn
from harness.config import scenarios
from harness.export import csv_export, html, markdown, versus_page
from harness.judging import flags
from harness.report import model
from harness.results import readable
from harness.results.records import Run


def _descriptions(run: Run) -> dict[str, str]:
    try:
        return {name: s.description for name, s in scenarios.load(run.conditions.get("profile") or "quick").items()}
    except Exception:  # the scenarios file changed since the run, or another profile: descriptions are optional
        return {}


def write_report(run_dir: Path) -> list[Path]:
    """Writes report.html, charts/*.png, summary.md and summary.csv into run_dir; returns their paths."""
    return written_report(run_dir)[1]


def written_report(run_dir: Path) -> tuple[model.Model, list[Path]]:
    """write_report's files, and the model they were written from."""
    from harness.export import charts

    run_dir = Path(run_dir)
    run = readable.load(run_dir / "results.json")
    flags.evaluate(run)
    m = model.build(run, _descriptions(run))
    chart_dir = run_dir / "charts"
    if chart_dir.exists():
        shutil.rmtree(chart_dir)  # no stale chart of an earlier report of the same run
    made = charts.write(m, chart_dir)
    written = [
        html.write(m, made, run_dir / "report.html"),
        markdown.write(m, run_dir / "summary.md"),
        csv_export.write(m, run_dir / "summary.csv"),
    ]
    return m, written + list(made.values()) + _versus_page(run, run_dir)


def _versus_page(run: Run, run_dir: Path) -> list[Path]:
    """versus_page.write where conditions.versus holds what it reads; a partial one (a hand-edited or cut file) or
    one whose names would leave charts/ skips the page with one line, and the rest of the report stands."""
    results = (run.conditions.get("versus") or {}).get("results")  # an object or none: results/readable.py
    if not results:
        return []
    names = [str(r.get(k)) for r in results if isinstance(r, dict) for k in ("scenario", "run")]
    if any(model.slug(n) != n.lower() for n in names):
        warn(
            f"{run_dir / 'results.json'}: conditions.versus names a scenario or run that is not a plain name; no versus page"
        )
        return []
    try:
        return versus_page.write(run, run_dir)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as exc:
        warn(
            f"{run_dir / 'results.json'}: conditions.versus is incomplete ({type(exc).__name__}: {exc}); no versus page"
        )
        return []

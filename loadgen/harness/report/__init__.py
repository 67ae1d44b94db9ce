"""The report of a run, from its results.json, one module per export (like hyperfine's exporters):
  report.html   html.py        one self-contained page: charts embedded, inline CSS, works opened from disk
  charts/*.png  charts.py      matplotlib (Agg)
  summary.md    markdown.py    the same tables in Markdown
  summary.csv   csv_export.py  one row per record
Flags are evaluated again here (they are a function of the data), so an older results.json reports with today's rules;
results.json itself is not rewritten."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import flags

REPORT_FILES = ("report.html", "summary.md", "summary.csv")


class ReportError(Exception):
    pass


def load(run_dir: Path) -> dict:
    path = run_dir / "results.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"{path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path} is not valid JSON: {exc}") from None
    old = [r for r in data.get("records") or [] if not isinstance(r.get("attempts"), list)]
    if old:
        raise ReportError(f"{path} was written by an older harness (records without their attempts); measure again")
    return data


def _descriptions(data: dict) -> dict[str, str]:
    try:
        from harness import scenarios
        profile = (data.get("conditions") or {}).get("profile") or "quick"
        return {name: s.description for name, s in scenarios.load(profile).items()}
    except Exception:  # the scenarios file changed since the run, or another profile: descriptions are optional
        return {}


def write_report(run_dir: Path) -> list[Path]:
    """Writes report.html, charts/*.png, summary.md and summary.csv into run_dir; returns their paths."""
    from harness.report import charts, csv_export, html, markdown, model

    run_dir = Path(run_dir)
    data = load(run_dir)
    flags.evaluate(data)
    m = model.build(data, _descriptions(data))
    chart_dir = run_dir / "charts"
    if chart_dir.exists():
        shutil.rmtree(chart_dir)  # no stale chart of an earlier report of the same run
    made = charts.write(m, chart_dir)
    written = [html.write(m, made, run_dir / "report.html"), markdown.write(m, run_dir / "summary.md"),
               csv_export.write(m, run_dir / "summary.csv")]
    return written + list(made.values())

"""`make calibrate`'s table: each load's figures, known against measured, with their verdicts and why (the judgement is
harness/calibrate/calibration.py's); a latency miss on an unsteady machine counted apart, as the machine's."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from harness.basics.formats import fmt_figure
from harness.basics.messages import console, say


def print_verdicts(loads: list[dict[str, Any]]) -> tuple[int, int]:
    """The known-against-measured table; returns (passed, missed)."""
    table = Table(title="make calibrate: known against measured (pass: within tolerance; n/a: not given or not judged)")
    for column in ("tool", "load", "limit", "figure", "known", "measured", "verdict", "why"):
        table.add_column(column, justify="right" if column in ("known", "measured") else "left", overflow="fold")
    passed = missed = 0
    for entry in loads:
        if entry.get("failed"):
            table.add_row(entry["tool"], entry["label"], "", "", "", "", "[red]failed[/]", entry["failed"])
            missed += 1
            continue
        for i, f in enumerate(entry["figures"]):
            verdict = {True: "[green]pass[/]", False: "[red]miss[/]", None: "[dim]n/a[/]"}[f["ok"]]
            if f.get("cause") == "machine":  # a latency miss on an unsteady machine: still a miss, said whose
                verdict = "[red]miss[/] (the machine's)"
            passed += f["ok"] is True
            missed += f["ok"] is False
            first = i == 0
            table.add_row(
                entry["tool"] if first else "",
                entry["label"] if first else "",
                entry["limit"] if first else "",
                f["figure"],
                fmt_figure(f["known"]),
                fmt_figure(f["measured"]),
                verdict,
                f["note"],
            )
        table.add_section()
    console.print(table)
    machine = sum(f.get("cause") == "machine" for e in loads for f in e.get("figures") or [])
    whose = f", {machine} of them latency on an unsteady machine (the machine's)" if machine else ""
    say(f"calibration: {passed} figure(s) within tolerance, {missed} missed{whose} (each miss explained above)")
    return passed, missed

"""Everything the harness prints: messages, progress, the final table (rich renders them; plain text in CI logs)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

import sys

# Wide enough for the results table when the output is a log file rather than a terminal
console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def say(message: str) -> None:
    console.print(message, markup=False)


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {message}")


def fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def results_table(records: list[dict], title: str) -> Table:
    """One row per record; records with errors or failures first, so they are never read as clean numbers."""
    def sort_key(r):
        return (0 if r.get("failed") or r["errors"]["total"] else 1, r["scenario"], r.get("run", ""), -(r.get("rps") or 0))

    table = Table(title=title, title_justify="left")
    for column in ("server", "scenario", "run", "tool", "conc", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="left" if column in ("server", "scenario", "run", "tool", "errors") else "right")
    for r in sorted(records, key=sort_key):
        lat = r.get("latency_ms") or {}
        if r.get("failed"):
            errors = f"[red]FAILED: {r['failed']}[/red]"
        elif r["errors"]["total"]:
            parts = ", ".join(f"{k} {v}" for k, v in r["errors"].items() if v and k != "total")
            errors = f"[red]{r['errors']['total']:,} ({parts})[/red]"
        else:
            errors = "0"
        run = f"{r.get('run', '')} ×{len(r.get('attempts', []))}"
        table.add_row(r["server"], r["scenario"], run, r["tool"], fmt(r["concurrency"]), fmt(r.get("requests")),
                      errors, fmt(r.get("rps")), fmt(lat.get("p50"), 2), fmt(lat.get("p99"), 2), fmt(lat.get("max"), 2))
    return table

"""`make report [RUN=...]`: the report of a run written again from its results.json (report/__init__.py), and how a
run is named on the command line (`make report` and `make compare` alike): a run id under results/, `latest`, a unique
prefix of a run id, a folder or a results.json path."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.basics.messages import console, fail, say
from harness.basics.paths import RESULTS
from harness.export.files import written_report
from harness.report import overview, resolution_text, terminal
from harness.report.first_screen import glance
from harness.results.records import DAMAGED, ResultsError

# what a value of an unexpected shape raises deep in the report, past every check of results/readable.py (one field
# naming another's key, say): still one line naming the file
UNREPORTABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError, OverflowError)


def unreportable(where: object, exc: Exception) -> str:
    return f"{where}: a value in it cannot be reported ({type(exc).__name__}: {str(exc)[:200]}); {DAMAGED}"


class RunNotFound(Exception):
    """No run, or several, answer to the name given."""


def resolve(run: str, root: Path | None = None) -> Path:
    """A run folder from a run id, `latest`, a unique prefix of a run id, a folder or a results.json path."""
    root = root or RESULTS
    given = Path(run)
    for candidate in (given, root / run):
        if candidate.is_file() and candidate.name == "results.json":
            return candidate.parent
        if (candidate / "results.json").is_file():
            return candidate
    matches = (
        sorted(p for p in root.glob(f"{run}*") if (p / "results.json").is_file() and p.name != "latest")
        if root.is_dir()
        else []
    )
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise RunNotFound(f"{run!r} names several runs: {', '.join(p.name for p in matches)}")
    known = sorted(p.name for p in root.iterdir() if (p / "results.json").is_file()) if root.is_dir() else []
    raise RunNotFound(f"no run {run!r} (no results.json there); runs under {root}: {', '.join(known) or 'none'}")


def unwritable(run_dir: Path) -> str | None:
    """Why the report cannot be written beside the run's results.json (a folder of another user, a read-only copy),
    found by writing there (root writes past a folder's mode, not on a read-only mount), before anything is changed."""
    try:
        with tempfile.TemporaryFile(dir=run_dir):
            return None
    except OSError as exc:
        return (
            f"{run_dir} cannot be written ({exc.strerror or exc}), and the report is written beside its results.json: "
            f"copy the run to a folder you can write (cp -r {run_dir} /tmp/) and run make report RUN=/tmp/{run_dir.name}"
        )


def cmd_report(run: str = "latest") -> int:
    """`make report [RUN=...]`: writes the report of a run (default: the newest) and prints where it is."""
    try:
        run_dir = resolve(run or "latest")
        readonly = unwritable(run_dir)
        if readonly:
            fail(readonly)
            return 2
        built, written = written_report(run_dir)
    except (RunNotFound, ResultsError) as exc:
        fail(str(exc))
        return 2
    except UNREPORTABLE as exc:
        fail(unreportable(run_dir / "results.json", exc))
        return 2
    except OSError as exc:  # a chart's folder of another owner, a full disk: said, with what was being written
        fail(f"the report of {run or 'latest'} could not be written ({exc.strerror or exc}: {exc.filename or '?'})")
        return 1
    pngs = [p for p in written if p.suffix == ".png"]
    for path in written:
        if path.suffix != ".png":
            say(f"wrote {path}")
    say(f"wrote {len(pngs)} charts in {run_dir / 'charts'}")
    matrix = overview.build(built)
    if matrix.columns:  # the answer for every server, last on the screen, with what the run could tell apart
        console.print(terminal.matrix_table(matrix, console.width))
        for line in [resolution_text.resolution_line(built), *resolution_text.duel_suggestions(built, glance(built))]:
            if line:
                console.print(line, markup=False, soft_wrap=True)
    return 0

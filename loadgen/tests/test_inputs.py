"""Inputs a user types (issue 34, "Data and inputs"): the Makefile's values reach the harness as one argument each,
never as shell; run ids cannot collide or leave results/; a results.json missing a key is one line, not a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.basics.paths import REPO, RESULTS
from harness.results import store

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = REPO / "loadgen"
# a stand-in for the harness (HARNESS overridden on make's command line): writes each argument it gets on a line
FAKE_HARNESS = "import sys; open(sys.argv[1], 'a').write('\\n'.join(sys.argv[2:]) + '\\n---\\n')"


@pytest.mark.parametrize(
    "target, variables, expected",
    [
        ("compare", {"A": "a b", "B": "x; touch {marker}"}, ["compare", "a b", "x; touch {marker}"]),
        ("compare", {"A": "x'; touch {marker}; '", "B": "b"}, ["compare", "x'; touch {marker}; '", "b"]),
        ("compare", {"A": 'x" ]; touch {marker}; [ "', "B": "b,c"}, ["compare", 'x" ]; touch {marker}; [ "', "b,c"]),
        ("report", {"RUN": "r `touch {marker}`"}, ["report", "r `touch {marker}`"]),
        ("test-hello;touch {marker}", {}, ["run", "hello;touch {marker}"]),
        ("up-a`touch {marker}`", {}, ["--servers", "a`touch {marker}`", "up"]),
        ("test-long-a;touch {marker}", {}, ["--servers", "a;touch {marker}", "run", "long"]),
    ],
)
def test_make_passes_each_value_as_one_argument_and_runs_no_second_command(target, variables, expected, tmp_path):
    """`make compare A="x; touch m"`: the harness gets `x; touch m` as one argument, and no shell runs `touch`."""
    marker, calls = f"inputs-marker-{os.getpid()}", tmp_path / "calls"  # no '/': make's % stops at one
    fill = {"marker": marker}
    harness = f'{sys.executable} -c "{FAKE_HARNESS}" {calls}'
    argv = [
        "make",
        "--no-print-directory",
        "-o",
        "setup",
        f"HARNESS={harness}",
        target.format(**fill),
        *(f"{k}={v.format(**fill)}" for k, v in variables.items()),
    ]
    try:
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert not any((where / marker).exists() for where in (REPO, LOADGEN)), (
            f"a value ran as a command: {done.stdout}{done.stderr}"
        )
    finally:
        for where in (REPO, LOADGEN):
            (where / marker).unlink(missing_ok=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls.read_text().split("\n---\n")[0].split("\n") == [e.format(**fill) for e in expected]


def test_two_runs_started_in_the_same_second_get_two_folders(tmp_path, monkeypatch):
    """Two runs of one kind in one second: each its own folder, neither overwrites the other's results.json."""
    monkeypatch.setattr(store, "RESULTS", tmp_path)
    first, second = store.new_run_id("hello"), store.new_run_id("hello")
    assert first != second
    assert (tmp_path / first).is_dir() and (tmp_path / second).is_dir()  # claimed, so a third cannot take them


@pytest.mark.parametrize("run_id", ["../x", "a/b", "..", ".", "latest", ".hidden", "a b", "x\n"])
def test_a_run_id_that_leaves_results_or_is_not_a_name_is_refused(run_id, tmp_path):
    """`--run-id ../x` would write outside results/: one line, exit 2, nothing made."""
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "HOSTS", "TWIN")}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--run-id", run_id, "--servers", "rust", "run", "no-such-scenario"],
        cwd=LOADGEN,
        env={**env, "RUNTIME": "local"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: --run-id") and "Traceback" not in done.stderr, lines
    assert not (REPO / "x").exists()


def test_an_existing_run_id_is_refused_not_overwritten(tmp_path):
    taken = f"test-inputs-taken-{os.getpid()}"
    folder = RESULTS / taken
    folder.mkdir(parents=True)
    (folder / "results.json").write_text("{}")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness", "--run-id", taken, "--servers", "rust", "run", "no-such-scenario"],
            cwd=LOADGEN,
            env={**os.environ, "RUNTIME": "local"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = (done.stdout + done.stderr).strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and taken in lines[0] and "already" in lines[0], lines
        assert (folder / "results.json").read_text() == "{}"
    finally:
        (folder / "results.json").unlink()
        folder.rmdir()


RECORD = {"server": "rust", "scenario": "hello", "run": "c10", "attempts": []}


@pytest.mark.parametrize(
    "damage, key",
    [
        (lambda d: d["records"][0].pop("server"), "server"),
        (lambda d: d["records"][0].pop("scenario"), "scenario"),
        (lambda d: d["records"][0]["attempts"].append({"round_position": {"position": 1}}), "of"),
        (lambda d: d["records"][0].update(flags=[{"reason": "x"}]), "flag"),
        (lambda d: d.update(records=[5]), None),
        (lambda d: d.update(verification={"rust": 5}), None),
    ],
)
@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_results_file_missing_a_key_is_one_line(damage, key, command, tmp_path):
    """A hand-edited or truncated results.json: `make report` / `make compare` name the file and the key, exit 2."""
    data = {"schema": 3, "run_id": "r", "conditions": {}, "verification": {}, "servers": {}, "records": [dict(RECORD)]}
    data["records"][0]["attempts"] = []
    damage(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    argv = ["report", str(tmp_path)] if command == "report" else ["compare", str(tmp_path), str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv], cwd=LOADGEN, capture_output=True, text=True, timeout=120
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, lines
    assert str(tmp_path / "results.json") in lines[0] and "measure again" in lines[0], lines
    if key:
        assert repr(key) in lines[0], lines

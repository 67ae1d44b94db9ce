"""Faults, fourth pass (issue 72): a hostile run folder never writes outside it, and every bad input is one line. Each
test here failed before its fix; loopback only, no server built or started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nobody
import pytest

from harness import cli
from harness.config import environment, scenarios
from harness.config.environment import ConfigurationError
from harness.config.manifest import discover
from harness.export import charts, command
from harness.measuring import conditions, lifecycle
from harness.results import readable
from harness.results.records import ResultsError, Run
from harness.results.store import RunIdError, RunStore, new_run_id
from harness.tools import TOOLS, oha_mix
from harness.versus import checkout
from harness.versus.checkout import GitFailed, RevisionError

LOADGEN = Path(__file__).resolve().parents[1]
SMALL_RUN = LOADGEN / "tests" / "fixtures" / "results_v3" / "results.json"
MIX_ATTEMPT = LOADGEN / "tests" / "fixtures" / "oha_mix" / "attempt1"  # oha's output and database, 300 requests


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    said = str(exc.value)
    assert "\n" not in said and said, said
    return said


def small_run() -> dict:
    return json.loads(SMALL_RUN.read_text())


# -- results/readable.py: its size read in one go, long integers, the commit that reaches git ----------------------


def test_the_size_cap_is_proportional_to_what_a_run_writes_and_read_in_one_go(tmp_path, monkeypatch):
    """64 MB (a bench writes about 1 MB), and no size looked at before the read is trusted: a file that says it is
    small when asked (it grew in between) is still refused by the read itself."""
    assert readable.MAX_BYTES == 64 * 2**20
    big = tmp_path / "results.json"
    with big.open("wb") as out:
        out.truncate(readable.MAX_BYTES + 1)  # sparse: no disk taken
    real_stat = Path.stat
    monkeypatch.setattr(
        Path,
        "stat",
        lambda self, **kw: (
            os.stat_result((0o100644, 0, 0, 1, 0, 0, 10, 0, 0, 0)) if self == big else real_stat(self, **kw)
        ),
    )
    with pytest.raises(ResultsError) as caught:
        readable.load(big)
    assert "larger than 64 MB" in one_line(caught) and str(big) in str(caught.value)


def test_an_integer_too_long_for_any_figure_is_one_line_not_a_chart_overflow(tmp_path):
    data = small_run()
    data["records"][0]["rps"] = "LONG"
    (tmp_path / "results.json").write_text(json.dumps(data).replace('"LONG"', "9" * 1000))
    with pytest.raises(ResultsError) as caught:
        readable.load(tmp_path / "results.json")
    assert "integer of 1000 digits" in one_line(caught)


@pytest.mark.parametrize("commit", ["--output=/tmp/x/", "c000", "HEAD", "abcdef1..main", "abcdef1-dirty-x", 5])
def test_a_git_commit_that_is_not_a_commit_is_refused(tmp_path, commit):
    """`make history` runs `git log a..b` on it: `--output=<file>` would make git write over that file."""
    data = small_run()
    data["conditions"]["git_commit"] = commit
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError) as caught:
        readable.load(tmp_path / "results.json")
    assert "git_commit" in one_line(caught)


@pytest.mark.parametrize("commit", ["3d2b4c3", "3d2b4c3-dirty", "a" * 40, None])
def test_a_commit_as_the_harness_writes_it_reads(tmp_path, commit):
    data = small_run()
    data["conditions"]["git_commit"] = commit
    (tmp_path / "results.json").write_text(json.dumps(data))
    assert readable.load(tmp_path / "results.json").conditions["git_commit"] == commit


def test_outside_a_git_checkout_the_run_records_no_commit(monkeypatch):
    """What git says there ("fatal: not a git repository") is no commit: written as null, which every reader takes."""
    monkeypatch.setattr(conditions, "shell_output", lambda command: "fatal: not a git repository (or any parent)")
    assert conditions.git_commit() is None
    monkeypatch.setattr(conditions, "shell_output", lambda command: "" if "status" in command else "3d2b4c3")
    assert conditions.git_commit() == "3d2b4c3"


# -- oha's per-request databases: deleted once read, unless KEEP_REQUEST_DB=1; the run's disk use ----------------------


@pytest.mark.parametrize("keep", [False, True])
def test_a_mix_attempts_database_is_deleted_once_its_figures_are_read(tmp_path, monkeypatch, keep):
    folder = tmp_path / "raw" / "attempt"
    shutil.copytree(MIX_ATTEMPT, folder)
    monkeypatch.setattr(oha_mix, "_keep", False)
    oha_mix.keep(keep)
    measured = TOOLS["oha-mix"].parse((folder / "output.txt").read_text(), folder)
    assert sum(e["requests"] for e in measured.details["endpoints"].values()) == 300  # its figures, read first
    assert (folder / oha_mix.DATABASE).exists() == keep


@pytest.mark.parametrize("folder", ["a#b", "a?b", "a b%20#?c"])
def test_the_database_is_opened_by_its_own_path_whatever_the_checkout_is_called(tmp_path, folder):
    """`file:<path>?mode=ro` unescaped: a # in the path ended it there and SQLite made an empty, writable file."""
    where = tmp_path / folder / "raw"
    shutil.copytree(MIX_ATTEMPT, where)
    paths = oha_mix.per_path(where / oha_mix.DATABASE)
    assert sum(e["requests"] for e in paths.values()) == 300
    assert {p.name for p in tmp_path.iterdir()} == {folder}  # nothing made beside it


def test_keep_request_db_is_checked_like_every_variable():
    servers = discover()
    assert environment.read({"KEEP_REQUEST_DB": "1"}, servers).keep_request_db
    assert not environment.read({}, servers).keep_request_db
    with pytest.raises(ConfigurationError) as caught:
        environment.read({"KEEP_REQUEST_DB": "yes"}, servers)
    assert "KEEP_REQUEST_DB='yes'" in one_line(caught)


def test_a_run_records_what_its_folder_took_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(lifecycle.command, "cmd_report", lambda run: 0)  # no charts drawn: the conditions only
    run_store = RunStore(Run("r1", {"profile": "quick", "runtime": "local"}, {}, {}, []), root=tmp_path)
    (run_store.raw / "attempt").mkdir()
    (run_store.raw / "attempt" / "output.txt").write_bytes(b"x" * 300_000)
    lifecycle.finish_run(run_store)
    written = json.loads(run_store.path.read_text())["conditions"]["disk_bytes"]
    assert 300_000 <= written < 1_000_000 and written == run_store.run.conditions["disk_bytes"]


# -- scenarios.toml: every scenario and mix value checked when the file is read -------------------------------------

PLAIN = '[{name}]\ntool = "wrk"\ntargets = [{{ route = "hello", path = {path} }}]\n{extra}profile.quick = {profile}\n'
RUNS = "{ runs = [{ concurrency = 4, duration_s = 1 }] }"


@pytest.mark.parametrize(
    "changes, says",
    [
        ({"path": '"hello"'}, "[s] targets[0] path = 'hello' must be a text starting with /"),
        ({"path": "5"}, "[s] targets[0] path = 5 must be a text starting with /"),
        ({"path": '"/a b"'}, "[s] targets[0] path = '/a b' must be a text starting with /"),
        ({"path": '"/a#b"'}, "[s] targets[0] path = '/a#b' must be a text starting with /"),
        ({"profile": '{ path = "fib", runs = [{ concurrency = 4 }] }'}, "[s] profile quick: path = 'fib' must be"),
        ({"name": '"a/b"'}, "[a/b] is not a scenario name"),
        ({"name": '"-x"'}, "[-x] is not a scenario name"),
        ({"extra": "description = 5\n"}, "[s]: description = 5 must be a text"),
        ({"extra": "in_bnech = false\n"}, "[s]: unknown key 'in_bnech'"),
        ({"profile": '{ runs = [{ label = "../x", concurrency = 4 }] }'}, "run 1: label = '../x' must be a name"),
        ({"profile": "{ runs = [{ label = 5, concurrency = 4 }] }"}, "run 1: label = 5 must be a name"),
        ({"profile": "{ runs = [{ concurrency = 4 }, { concurrency = 4 }] }"}, "two runs are labelled alike (c4, c4)"),
        ({"profile": "{ runs = [{ concurrency = 4 }], atempts = 2 }"}, "[s] profile quick: unknown key 'atempts'"),
    ],
)
def test_a_bad_scenario_value_is_one_line_naming_the_scenario_and_key(tmp_path, changes, says):
    """`path = "hello"` was accepted and failed every attempt (http://127.0.0.1:8080hello); `path = 5` was a traceback
    mid-run; a label with a / names a file outside the run's raw/."""
    values = {"name": "s", "path": '"/hello"', "extra": "", "profile": RUNS, **changes}
    (tmp_path / "scenarios.toml").write_text(PLAIN.format(**values))
    with pytest.raises(scenarios.ScenarioError) as caught:
        scenarios.load("quick", tmp_path / "scenarios.toml")
    assert says in one_line(caught)


@pytest.mark.parametrize(
    "target, says",
    [
        (
            '{ route = "hello", path = "/hello", weight = 60 }, { route = "tweets", path = 7, weight = 40 }',
            "targets[1] path = 7",
        ),
        ('{ route = "hello", path = "/a b", weight = 100 }', "targets[0] path = '/a b'"),
        ('{ route = "hello", path = "/h", weight = 100, wieght = 1 }', "targets[0]: unknown key 'wieght'"),
    ],
)
def test_a_bad_mix_value_is_one_line_naming_the_scenario_and_key(tmp_path, target, says):
    (tmp_path / "scenarios.toml").write_text(f'[m]\ntool = "oha-mix"\ntargets = [{target}]\nprofile.quick = {RUNS}\n')
    with pytest.raises(scenarios.ScenarioError) as caught:
        scenarios.load("quick", tmp_path / "scenarios.toml")
    assert "[m] " + says in one_line(caught)


def test_the_projects_scenarios_read_in_every_profile():
    for profile in scenarios.PROFILES:
        assert scenarios.load(profile)


# -- make versus: BASE is one revision, git's failures one line ---------------------------------------------------------


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository of two commits on `main`."""
    path = tmp_path / "repo"
    path.mkdir()
    for args in (
        ("init", "-q", "-b", "main"),
        ("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one"),
        ("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "two"),
    ):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return path


@pytest.mark.integration
@pytest.mark.parametrize("asked", ["main~1..main", "main~1...main", "main^!", "main^@", "--output=x", "main~1 main"])
def test_a_base_that_is_not_one_revision_is_refused_at_once_in_one_line(repo, asked):
    """BASE=main..HEAD was taken (rev-parse printed two lines, both kept as "the commit"), to fail after the builds."""
    with pytest.raises(RevisionError) as caught:
        checkout.resolve(repo, asked, "BASE")
    assert one_line(caught).startswith("BASE=")


@pytest.mark.integration
def test_one_revision_resolves_to_its_full_commit(repo):
    assert len(checkout.resolve(repo, "main~1", "BASE").sha or "") == 40


def slow_git(folder: Path) -> Path:
    folder.mkdir()
    (folder / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (folder / "git").chmod(0o755)
    return folder


@pytest.mark.integration
def test_git_that_does_not_answer_is_one_line_at_the_command_line(repo, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(checkout, "GIT_TIMEOUT_S", 0.3)
    monkeypatch.setenv("PATH", f"{slow_git(tmp_path / 'bin')}:{os.environ['PATH']}")
    with pytest.raises(GitFailed) as caught:
        checkout.resolve(repo, "main~1", "BASE")
    assert "did not answer within 0.3 s" in one_line(caught)
    # as `make versus` says it: the command line's one line and exit status 1 (`list` takes no lock; its work is this)
    monkeypatch.setattr(cli, "run_command", lambda *args: checkout.resolve(repo, "main~1", "BASE"))
    assert cli.main(["list"]) == 1
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("error: `git rev-parse") and "Traceback" not in said[0], said


@pytest.mark.integration
def test_no_git_on_the_path_is_one_line(repo, tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(GitFailed) as caught:
        checkout.resolve(repo, "main~1", "BASE")
    assert "git cannot run here" in one_line(caught)


# -- results/latest: replaced in one step; a real folder there is left and said ---------------------------------------


def a_run(run_id: str, root: Path) -> RunStore:
    return RunStore(Run(run_id, {"profile": "quick"}, {}, {}, []), root=root)


def test_latest_always_names_a_run_while_it_is_replaced(tmp_path, monkeypatch):
    """It was unlinked, then made again: a reader between the two found no run."""
    a_run("r1", tmp_path)
    real_symlink_to = Path.symlink_to

    def symlink_to(self, target, *args):
        assert (tmp_path / "latest").is_symlink(), "latest was removed before its new link was made"
        return real_symlink_to(self, target, *args)

    monkeypatch.setattr(Path, "symlink_to", symlink_to)
    a_run("r2", tmp_path)
    assert os.readlink(tmp_path / "latest") == "r2" and (tmp_path / "latest" / "results.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "r1", "r2"]  # no link left half made


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_real_folder_or_file_called_latest_is_left_and_said(tmp_path, capsys, kind):
    """A real folder there was a traceback after the run's folder was made (unlink of a folder)."""
    latest = tmp_path / "latest"
    if kind == "folder":
        latest.mkdir()
        (latest / "mine.txt").write_text("mine")
    else:
        latest.write_text("mine")
    run = a_run("r1", tmp_path)
    said = capsys.readouterr().out
    assert f"{latest} is a {kind}, not the link to the newest run: left as it is" in " ".join(said.split())
    assert (latest / "mine.txt" if kind == "folder" else latest).read_text() == "mine"
    assert run.path.is_file()


# -- a generated run id checked like a given one ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["a/b", "../x", "a b", "x" * 200])
def test_a_generated_run_id_outside_the_run_id_alphabet_is_refused_and_nothing_made(tmp_path, kind):
    """`make test-<a>-<b>-...` joins scenario names into the id: a / made a folder under another, 200 characters one no
    --run-id may have."""
    with pytest.raises(RunIdError) as caught:
        new_run_id(kind, tmp_path)
    assert "--run-id" in one_line(caught)
    assert not list(tmp_path.iterdir()) and not (tmp_path.parent / "x").exists()


def test_a_generated_run_id_of_plain_names_is_made(tmp_path):
    made = new_run_id("hello-weather", tmp_path)
    assert made.endswith("-hello-weather") and (tmp_path / made).is_dir()


# -- make twin: AA said back as text, never run ---------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("value", ["`touch {marker}`", "$$(touch {marker})", 'x"; touch {marker}; echo "', "x'y"])
def test_make_twin_says_a_bad_aa_without_running_it(tmp_path, value):
    marker = tmp_path / "ran"
    aa = value.format(marker=marker)
    done = subprocess.run(
        [
            "make", "--no-print-directory", "-o", "setup", f"HARNESS={sys.executable} -c pass",
            "twin", "SERVER=node", "TWIN=/nonexistent", f"AA={aa}",
        ],
        cwd=LOADGEN.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert not marker.exists(), f"AA ran as a command: {done.stdout}{done.stderr}"
    said = aa.replace("$$", "$")  # make's own escape of a $
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip() == f"make twin: AA is 1 (the A/A beside, the default) or 0, not {said}"


# -- make report on a folder it cannot write: one line --------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to nobody to be a user who cannot write the folder")
def test_make_report_on_a_folder_it_cannot_write_is_one_line_saying_how_to_copy_it():
    assert charts.write  # matplotlib loaded before the fork: the child has no home to cache its fonts in
    parent = Path(tempfile.mkdtemp(dir=os.environ["BENCH_RESULTS"]))  # a folder `nobody` can reach and read
    try:
        parent.chmod(0o755)
        run = parent / "run"
        run.mkdir(mode=0o755)
        shutil.copy(SMALL_RUN, run / "results.json")
        said = nobody.as_nobody(lambda: command.cmd_report(str(run)))
        assert "error" not in said, said
        lines = said["printed"].strip().splitlines()
        assert said["returned"] == 2 and len(lines) == 1, lines
        assert lines[0].startswith(f"error: {run} cannot be written (Permission denied)") and "cp -r" in lines[0]
        assert sorted(p.name for p in run.iterdir()) == ["results.json"]  # nothing begun
    finally:
        shutil.rmtree(parent)

"""The `long` scenario (seed 001's long run) as a run measures it: many thousands of connections at once, one request
each, fitted to what the open-file limits leave a server process (servers/preflight.py), and out of `make bench`."""

from __future__ import annotations

from harness.config import scenarios
from harness.servers.preflight import SERVER_FD_RESERVE, announce_limits, fitted, within_open_files


def test_long_asks_seed_001s_twenty_thousand_connections_each_cycled_five_times_outside_the_bench():
    quick = scenarios.load("quick")
    [run] = quick["long"].runs
    assert run.load == {"requests": 100_000, "concurrency": 20_000, "timeout_s": 10000, "continue_on_error": True}
    assert "long" not in [s.name for s in scenarios.select(quick, [])]  # make bench leaves it out
    assert [s.name for s in scenarios.select(quick, ["long"])] == ["long"]  # make test-long-<server> runs it
    [seed] = scenarios.load("seed")["long"].runs
    assert (seed.load["requests"], seed.load["concurrency"]) == (1_000_000, 20_000)


def test_connections_are_fitted_to_what_the_open_file_limit_leaves_a_server_and_said():
    long = scenarios.load("quick")["long"]
    here, notes = within_open_files(long, 20_000)  # this machine's hard limit
    [run] = here.runs
    assert (run.label, run.load["concurrency"], run.load["requests"]) == ("c19000", 20_000 - SERVER_FD_RESERVE, 100_000)
    assert notes == [
        "long c19000: 19,000 connections, not the 20,000 asked: a server process may hold 20,000 open files (the "
        "hard limit, ulimit -Hn), 1,000 of them kept for its own; raise the limit for more"
    ]
    roomy, none = within_open_files(long, 65_536)
    assert roomy is long and none == []  # room for all 20,000: as asked
    low = scenarios.load("quick")["low-compute"]
    assert within_open_files(low, 20_000) == (low, [])  # 1,000 connections: untouched


def test_a_run_measures_and_announces_the_fitted_load():
    long = scenarios.load("quick")["long"]
    assert fitted([long], 20_000)[0].runs[0].load["concurrency"] == 19_000
    notes = announce_limits([long], 20_000)
    # one ab process holds 19,000 connections (its limit less 64): fitted, not split
    assert len(notes) == 1 and notes[0].startswith("long c19000: 19,000 connections, not the 20,000 asked")

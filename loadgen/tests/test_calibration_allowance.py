"""A calibration's latency tail judged with what the machine's stalls and the server's late answers add, each measured
(harness/calibrate/allowance.py): the figures of a recorded `make calibrate` (2026-11-26 16:08: wrk's burn, c = 8 on
one core burning 2 ms each, 16 ms known) and the stalls this machine's probe reads (0.38 % of the time, at worst
4.05 ms). Hand-made records and accounts: exact values, no server."""

from calibrated_records import one_attempt

from harness.calibrate import allowance, calibration
from harness.calibrate.server_seen import Accounts, ServerSeen
from harness.results.records import Run

# what the steadiness probe read on this machine: both CPUs stalled 0.38 % of the time, the longest 4.05 ms
STALLS = {
    "server": {"per_s": 0.2, "worst_ms": 4.05, "share": 0.0008},
    "loadgen": {"per_s": 1.1, "worst_ms": 2.76, "share": 0.003},
}
BURN_FIGURES = {"p50": 15.998, "p90": 16.014, "p99": 16.5, "p99.9": 18.451, "max": 19.225}  # wrk's, 16:08


def load_of(tool: str, label: str) -> calibration.CalibrationLoad:
    return next(x for x in calibration.read_plan().loads if x.tool == tool and x.label == label)


def verdicts(
    tool: str, label: str, rps: float, latency: dict[str, float], stalls: object, late_max_ms: float = 0.04
) -> dict[str, dict[str, object]]:
    load = load_of(tool, label)
    stem = f"calibrated-{load.scenario}-{load.label}-1"
    run_fields = {"server": "calibrated", "scenario": load.scenario, "run": load.label, "tool": load.tool}
    rec = one_attempt(run_fields, rps, round(rps * 10), latency_ms=latency, raw=[f"raw/{stem}/output.txt"])
    probe = {"cv": {"server": 0.012, "loadgen": 0.013}} | ({"stalls": stalls} if stalls else {})
    run = Run("r", {"steadiness": {"before": probe}}, {}, {"calibrated": {"roles": ["calibrated"]}}, [rec])
    accounts = Accounts()
    accounts.by_stem[stem] = ServerSeen(round(rps * 10), 10.0, rps, 16.0, 0.01, late_max_ms, 0, None)
    [entry] = calibration.judge_run(
        run, calibration.Plan((load,), calibration.read_plan().settings), "calibrated", accounts
    )
    return {str(f["figure"]): f for f in entry["figures"]}


def test_a_burn_tail_within_the_machines_stalls_passes_and_says_so():
    figures = verdicts("wrk", "burn", 500.0, BURN_FIGURES, STALLS)
    for name in ("p99.9", "max"):
        assert figures[name]["ok"] is True, figures[name]
        assert "4.05 ms for the machine's stalls" in str(figures[name]["note"])
    assert figures["p50"]["ok"] is True and "stalls" not in str(figures["p50"]["note"])


def test_without_a_stall_reading_the_same_tail_misses():
    figures = verdicts("wrk", "burn", 500.0, BURN_FIGURES, None)
    assert figures["p99.9"]["ok"] is False and figures["max"]["ok"] is False


def test_p99_is_not_allowed_where_stalls_are_rarer_than_its_share_and_a_tail_beyond_them_misses():
    # 0.38 % of the time stalled cannot hold 1 % of the requests: p99 16.93 (+0.93 ms) stays a miss
    figures = verdicts("wrk", "burn", 500.0, BURN_FIGURES | {"p99": 16.93}, STALLS)
    assert figures["p99"]["ok"] is False
    # 16 ms + 5 % (0.8 ms) + the longest stall 4.05 ms = 20.85 ms: a max of 21 ms is more than the machine explains
    figures = verdicts("wrk", "burn", 500.0, BURN_FIGURES | {"max": 21.0}, STALLS)
    assert figures["max"]["ok"] is False


def test_a_figure_below_its_known_value_gets_no_allowance():
    figures = verdicts("wrk", "burn", 500.0, BURN_FIGURES | {"p99.9": 12.0}, STALLS)
    assert figures["p99.9"]["ok"] is False


def test_the_servers_own_late_answer_allows_the_max_it_explains():
    """ab's paced max read 85.05 ms where 80 were due and the server's slowest answer left 5.06 ms late."""
    paced = {"p50": 40.211, "p90": 40.453, "p99": 80.367, "p99.9": 81.003, "max": 85.047}
    assert verdicts("ab", "paced", 749.7, paced, None, late_max_ms=0.3)["max"]["ok"] is False
    figure = verdicts("ab", "paced", 749.7, paced, None, late_max_ms=5.06)["max"]
    assert figure["ok"] is True and "the server's own latest answer, 5.06 ms after due" in str(figure["note"])


def test_the_runs_stalls_are_the_larger_probes_both_cpus_added():
    conditions = {
        "steadiness": {
            "before": {"stalls": STALLS},
            "after": {"stalls": {"server": {"per_s": 0.1, "worst_ms": 1.5, "share": 0.0002}}},
            "old": {"cv": {"server": 0.01}},
        }
    }
    assert allowance.probe_stalls(conditions) == allowance.Stalls(0.0038, 4.05)
    assert allowance.probe_stalls({}) is None


def test_the_hypervisors_steal_during_the_load_allows_the_max_and_nothing_else():
    """A burn max of 23.7 ms where 16 were due, the server's CPUs stolen 10 ms in the load (19:38): within it."""
    assert allowance.allowance_ms("max", None, 0.39, 10.0) == (
        10.0,
        "the hypervisor's steal of the server's CPUs during the load, 10 ms (/proc/stat)",
    )
    assert allowance.allowance_ms("p99.9", None, 0.39, 10.0) == (0.0, "")
    assert allowance.allowance_ms("max", None, 0.39, 0.0)[0] == 0.39

"""The warming and drifting flags judge a record's attempts against the other servers of its rounds
(harness.judging.round_trend): a climb the whole round shares is the machine's, not the server's."""

import math
import random

from test_flags import evaluated, names, reason, rec

from harness.judging.round_trend import runs_on_a_jvm
from harness.results.flag_kinds import TREND_TOLERANCE
from harness.results.records import Record
from harness.stats import trend

SHARED_CLIMB = (1.0, 1.3, 1.6, 1.6, 1.9, 2.0)  # every server of the round, round by round: the machine


def in_rounds(record: dict, position: int, servers: int) -> dict:
    """`record`'s attempts taken in interleaved rounds, at `position` of `servers` turns."""
    for n, a in enumerate(record["attempts"], start=1):
        a["attempt"], a["round_position"] = n, {"position": position, "of": servers}
    return record


def group(levels: dict[str, float], own: dict[str, tuple[float, ...]] | None = None, rounds: bool = True) -> list:
    """One scenario's records: each server's level times the shared climb (times its own factors, where given)."""
    out = []
    for i, (server, level) in enumerate(levels.items()):
        factors = (own or {}).get(server, (1.0,) * len(SHARED_CLIMB))
        rates = tuple(round(level * s * f, 1) for s, f in zip(SHARED_CLIMB, factors))
        record = rec(server=server, rates=rates)
        out.append(in_rounds(record, i + 1, len(levels)) if rounds else record)
    return out


FOUR = {"rust": 90_000.0, "node": 30_000.0, "express": 9_000.0, "nginx": 60_000.0}


def flagged(records: list[Record]) -> dict[str, list[str]]:
    return {r.server: names(r) for r in records if {"warming", "drifting"} & set(names(r))}


def test_a_climb_every_server_of_the_rounds_shares_flags_none():
    assert flagged(evaluated(*group(FOUR))) == {}


def test_the_same_attempts_measured_back_to_back_are_judged_on_their_own_rates():
    found = evaluated(*group(FOUR, rounds=False))
    assert flagged(found) == {s: ["warming"] for s in FOUR}
    assert "against" not in reason(found[0])


def test_a_server_that_climbs_beyond_its_round_mates_is_warming_and_says_against_whom():
    akka = {"akka": (0.5, 0.6, 0.75, 0.9, 1.0, 1.0)}  # its own JIT on top of the machine's climb
    found = evaluated(*group({**FOUR, "akka": 5_000.0}, akka))
    assert flagged(found) == {"akka": ["warming"]}
    (record,) = [r for r in found if r.server == "akka"]
    assert "against the other 4 servers of its rounds" in reason(record)


def test_a_server_that_falls_while_its_round_mates_climb_is_drifting():
    falling = {"node": (1.0, 0.8, 0.7, 0.6, 0.55, 0.5)}
    assert flagged(evaluated(*group(FOUR, falling))) == {"node": ["drifting"]}


def test_fewer_than_three_round_mates_judge_nothing_the_record_keeps_its_own_rates():
    two = {"rust": 90_000.0, "node": 30_000.0, "nginx": 60_000.0}
    assert flagged(evaluated(*group(two))) == {s: ["warming"] for s in two}


def bound_on(record: dict, role: str) -> dict:
    """`record`'s attempts bound on `role`'s CPU (the busier one), both CPUs' speeds read (CPU_METER=1)."""
    for a in record["attempts"]:
        for r in ("server", "loadgen"):
            a["samples"][r].update(cpu_util=0.97 if r == role else 0.4, cpu_speed=1.0)
    return record


def test_a_server_bound_on_the_load_generator_s_cpu_is_not_judged_by_those_on_the_server_s():
    """The host slows each CPU alone (docs/cpu-speed.md): the server's CPU slowed the four bound on it by 40 % over
    the rounds while rust, bound on the load generator's, held. The four are flat against each other; rust has no
    three mates on its CPU and is judged on its own rates: flat. Judged against the four, it would read warming."""
    slowed = (1.0, 0.9, 0.8, 0.75, 0.7, 0.6)
    levels = {"node": 30_000.0, "express": 9_000.0, "akka": 25_000.0, "pekko": 24_000.0}

    def measured(rust_on: str) -> list[Record]:
        four = [
            bound_on(in_rounds(rec(server=s, rates=tuple(level * f for f in slowed)), i, 5), "server")
            for i, (s, level) in enumerate(levels.items(), start=1)
        ]
        return evaluated(*four, bound_on(in_rounds(rec(server="rust", rates=(90_000.0,) * 6), 5, 5), rust_on))

    assert flagged(measured("loadgen")) == {}
    assert flagged(measured("server")) == {"rust": ["warming"]}


def test_round_mates_take_out_a_shared_drift_and_keep_a_server_s_own_climb():
    """Synthetic rounds: a shared drift of 10 % a round (a random walk), 5 % own noise per attempt, ten servers, six
    rounds. On their own rates 40 % of the flat servers read as moving; against their round-mates 7 %, within 3 points
    of what the trend rule reads on their own noise alone (6 %), while a server climbing 40 % over its attempts is
    still found."""
    rng = random.Random(41)
    alone = mates = noise_alone = found = 0
    trials = 200
    for _ in range(trials):
        walk = [0.0]
        for _ in range(5):
            walk.append(walk[-1] + rng.gauss(0.02, 0.10))
        own = [[rng.gauss(0, 0.05) for _ in walk] for _ in range(10)]
        climb = [0.4 * k / 5 for k in range(6)]
        table = [
            [w + e + (climb[k] if s == 0 else 0.0) for k, (w, e) in enumerate(zip(walk, own[s]))] for s in range(10)
        ]
        records = [
            in_rounds(rec(server=f"s{s}", rates=tuple(math.exp(x) * 1000 for x in row)), s + 1, 10)
            for s, row in enumerate(table)
        ]
        runs = evaluated(*records)
        found += "warming" in names(runs[0])
        for s, r in enumerate(runs[1:], start=1):
            mates += bool({"warming", "drifting"} & set(names(r)))
            alone += trend.classify([a.rps for a in r.attempts], TREND_TOLERANCE).moving
            noise_alone += trend.classify([math.exp(e) for e in own[s]], TREND_TOLERANCE).moving
    flat = trials * 9
    assert mates / flat <= noise_alone / flat + 0.03
    assert alone / flat >= 0.25
    assert found / trials >= 0.9


def test_the_tally_tells_a_jvm_by_the_version_its_run_recorded():
    akka = "akka-http 10.2.10, akka 2.6.20, scala 2.13.16 JRE 17.0.15+6-Debian-1deb12u1"  # a bench's servers section
    assert runs_on_a_jvm({"version": akka})
    assert not runs_on_a_jvm({"version": "v22.23.3 4.22.3"})  # express
    assert not runs_on_a_jvm({})  # a server the run did not describe

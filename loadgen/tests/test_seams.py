"""The two seams of the bench's run, each filled with a fake (nothing is started, no tool runs): the campaign's `Stage`
(where its servers are brought up and put down: servers/readiness.py) and the rounds' `Judge` (whether a record still
moves, which tied records more rounds would tell apart: judging/referee.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.config.manifest import Server, discover
from harness.config.scenarios import LoadRun, Scenario, Settings, WarmupRule
from harness.judging.more_rounds import Extension
from harness.measuring.campaign import Campaign
from harness.measuring.clock import Clock
from harness.measuring.executor import record_of
from harness.measuring.run_plan import History
from harness.measuring.scheduler import Allowance, Rounds
from harness.results.records import Attempt
from harness.results.records import Warmup as WarmupResult
from harness.servers.readiness import Target
from harness.stats.trend import WARMING, Trend
from harness.tools.output import Errors

SETTINGS = Settings(repeat=3, warmup=WarmupRule(duration_s=1.0, tolerance=0.1, max_runs=5))
HELLO = Scenario(
    "hello", "", "wrk", (("hello", "/hello"),), (LoadRun("c100", {"concurrency": 100, "duration_s": 1}),), None
)


class Stage:
    """Brings up the servers it is told to (the others fail), or is interrupted at one; notes what it puts down."""

    def __init__(self, up: set[str], interrupted_at: str | None = None):
        self.up, self.interrupted_at = up, interrupted_at
        self.brought: list[str] = []
        self.put: list[str] = []

    def bring_up(self, server: Server) -> Target | None:
        if server.name == self.interrupted_at:
            raise KeyboardInterrupt
        self.brought.append(server.name)
        return Target(server, None) if server.name in self.up else None  # type: ignore[arg-type]

    def put_down(self, names: list[str]) -> None:
        self.put += names


def campaign(stage: Stage) -> Campaign:
    session = SimpleNamespace(runtime=SimpleNamespace(name="local"), is_upstream=lambda name: False)
    return Campaign(session, None, Clock(), SETTINGS, stage)  # type: ignore[arg-type]


def test_a_group_whose_server_fails_to_come_up_is_not_ok_and_is_put_down_whole():
    known = discover()
    stage = Stage(up={"rust"})
    assert campaign(stage).measure_group([known["rust"], known["node"]], []) is False
    assert stage.brought == ["rust", "node"] and stage.put == ["rust", "node"]


def test_a_group_every_server_of_which_came_up_is_ok():
    known = discover()
    stage = Stage(up={"rust"})
    assert campaign(stage).measure_group([known["rust"]], []) is True
    assert stage.put == ["rust"]


def test_ctrl_c_while_a_group_comes_up_still_puts_the_whole_group_down():
    known = discover()
    stage = Stage(up={"rust", "node"}, interrupted_at="node")
    with pytest.raises(KeyboardInterrupt):
        campaign(stage).measure_group([known["rust"], known["node"], known["akka"]], [HELLO])
    assert stage.brought == ["rust"] and stage.put == ["rust", "node", "akka"]


class Executor:
    """The rounds' executor (scheduler.Executor): each server's attempts at the rates it is given, nothing run."""

    runtime_name, round_no = "local", None

    def __init__(self, rates: dict[str, list[float]]):
        self.history, self.dead = History(), {}
        self.rates = {name: iter(values) for name, values in rates.items()}
        self.attempts: list[str] = []
        self.records: dict[str, object] = {}

    def warm_up(self, step, rule):
        return WarmupResult("wrk", [], True, 0.1, 5, 100.0)

    def attempt(self, job, n, repeat, warm_rate, position):
        self.attempts.append(job.name)
        return Attempt(n, None, 1, [], [], None, {}, 10, 10, Errors(), 1.0, next(self.rates[job.name]), {})

    def keep(self, job, attempts, warmup, marks):
        self.records[job.name] = record = record_of(job, attempts, warmup, marks, self.runtime_name, None)
        return record

    def evaluate(self):
        pass

    def record_capacity(self):
        pass


class Judge:
    """Calls `moving` the servers it names, whatever their attempts; offers `extra` more rounds to `tied`."""

    def __init__(self, moving: set[str], tied: tuple[str, ...] = (), extra: int = 0):
        self.moving_names, self.tied, self.extra = moving, tied, extra
        self.asked: list[int] = []

    def moving(self, attempts, mates):
        name = attempts[0].raw[0] if attempts and attempts[0].raw else None
        return (Trend(WARMING, 0.2, 1.0), len(mates)) if name in self.moving_names else None

    def more_rounds(self, records, repeat, round_s, share_s):
        self.asked.append(len(records))
        return Extension(self.tied, self.extra) if self.tied else None


def rounds(executor: Executor, judge: Judge, allowance: Allowance) -> Rounds:
    return Rounds(executor, Clock(), SETTINGS, allowance, judge)  # type: ignore[arg-type]


class Naming(Executor):
    """As Executor, each attempt naming its server in `raw` so that the fake judge can tell whose attempts it reads."""

    def attempt(self, job, n, repeat, warm_rate, position):
        a = super().attempt(job, n, repeat, warm_rate, position)
        a.raw = [job.name]
        return a


def test_what_the_judge_calls_moving_is_measured_again_where_the_allowance_holds_it():
    known = discover()
    executor = Naming({"rust": [100.0] * 6, "node": [50.0] * 3})
    members = [Target(known["rust"], None), Target(known["node"], None)]  # type: ignore[arg-type]
    rounds(executor, Judge(moving={"rust"}), Allowance(left_s=600.0)).scenario(members, HELLO)
    assert executor.attempts.count("rust") == 6 and executor.attempts.count("node") == 3
    assert executor.records["rust"].remeasured["first_attempts"] == [100.0] * 3  # type: ignore[attr-defined]
    assert executor.records["node"].remeasured is None  # type: ignore[attr-defined]


def test_what_the_judge_calls_moving_is_only_flagged_where_no_time_is_left():
    known = discover()
    executor = Naming({"rust": [100.0] * 3, "node": [50.0] * 3})
    members = [Target(known["rust"], None), Target(known["node"], None)]  # type: ignore[arg-type]
    rounds(executor, Judge(moving={"rust"}), Allowance(left_s=0.0)).scenario(members, HELLO)
    assert executor.attempts.count("rust") == 3 and executor.records["rust"].remeasured is None  # type: ignore[attr-defined]


def test_the_tied_records_the_judge_names_get_its_further_rounds_within_a_budget():
    known = discover()
    names = ["rust", "node", "express"]
    executor = Naming({"rust": [100.0] * 5, "node": [99.0] * 5, "express": [50.0] * 3})
    members = [Target(known[n], None) for n in names]  # type: ignore[arg-type]
    judge = Judge(moving=set(), tied=("rust", "node"), extra=2)
    rounds(executor, judge, Allowance(budget_left=lambda: 600.0)).scenario(members, HELLO)
    assert judge.asked == [3]  # once, after the first look, never after the second
    assert [executor.attempts.count(n) for n in names] == [5, 5, 3]
    assert len(executor.records["rust"].attempts) == 5  # type: ignore[attr-defined]

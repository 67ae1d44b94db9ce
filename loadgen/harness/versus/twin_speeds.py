"""`make twin` on the server CPU's speed (CPU_METER=1, the default of `make twin`; docs/cpu-speed.md).

Every side of a twin sitting runs on the same server CPUs in turns, each attempt 3 s, and the host slows a virtual CPU
for seconds at a time: a round's ratio ours ÷ theirs carries the difference of two attempts' CPU speeds. As in
`make versus` (versus/speeds.py), the meter reads each CPU's speed beside every attempt and, where every attempt of a
route pair and pattern, on both sides, is bound on the server's CPU (the busier of the server's and the tools' shares
of their CPUs), each attempt's req/s is divided by that CPU's speed before the ratios are taken. The speed's level
cancels in the ratio; what it leaves is what the CPU's slow-downs made of each attempt. Anywhere else (a load bound on
the tools' CPU, an attempt without its speed) the ratios stay as measured, and the table says why. The meter's own
ours ÷ theirs is given beside: a server that slowed its CPU's meter would carry that into the ratio on speed."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from harness.basics import stats
from harness.basics.cpu_speed import SpeedMeter
from harness.basics.cpus import CpuPlan
from harness.basics.sampling import ProcessCost, children_cpu_s
from harness.results.noise import ROLES
from harness.versus.twin_table import again_summary, summary

ROLE_NAMES = {"server": "server's", "loadgen": "tools'"}


class AttemptWatch:
    """Around one attempt (`with`): each role's CPU speed (the meter, when CPU_METER=1) and each role's share of its
    CPUs, the measured server's from its process cost and the tools' from this process's reaped children."""

    def __init__(self, plan: CpuPlan):
        self.cores = {"server": len(plan.server), "loadgen": len(plan.loadgen)}
        self.meter = SpeedMeter({"server": list(plan.server), "loadgen": list(plan.loadgen)})
        self.speeds: dict[str, float] = {}
        self.wall_s = self.tools_s = 0.0

    def __enter__(self) -> AttemptWatch:
        self._tools_before, self._began = children_cpu_s(), time.monotonic()
        self.meter.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        # the tools are reaped by now; the meters are not yet, so their own CPU is not counted as the tools'
        self.wall_s, self.tools_s = time.monotonic() - self._began, children_cpu_s() - self._tools_before
        if kind is None:
            self.speeds = self.meter.stop()
        else:
            self.meter.cancel()

    def reading(self, before: ProcessCost | None, after: ProcessCost | None) -> dict[str, Any] | None:
        """The attempt's {"speed": {role: share of full speed}, "util": {role: share of its CPUs}}; None where the
        meter did not run or either side's figure could not be read."""
        if set(self.speeds) != set(ROLES) or before is None or after is None or self.wall_s <= 0:
            return None
        server_s = after.user_s + after.system_s - before.user_s - before.system_s
        return {
            "speed": self.speeds,
            "util": {
                "server": round(server_s / (self.wall_s * self.cores["server"]), 3),
                "loadgen": round(self.tools_s / (self.wall_s * self.cores["loadgen"]), 3),
            },
        }


def bound_role(attempts: list[dict[str, Any]]) -> str | None:
    """The role whose CPU a side's `attempts` are bound on: the busier over them all; None where one has no reading."""
    if not attempts or any(a.get("cpu") is None for a in attempts):
        return None
    return max(ROLES, key=lambda role: sum(a["cpu"]["util"][role] for a in attempts))


def on_speed(attempts: list[dict[str, Any]], labels: tuple[str, ...]) -> dict[str, Any]:
    """One route pair and pattern's rounds on the server CPU's speed: "rule" says which figure, and where it is the
    speed, summary() of the divided rates, the A/A's again_summary() likewise, and the meter's ours ÷ theirs."""
    sides = {label: [a for a in attempts if a["side"] == label] for label in labels}
    bound = {label: bound_role(side) for label, side in sides.items()}
    if None in bound.values():
        return {"rule": "as measured: an attempt without its CPUs' speeds (CPU_METER=0, or the meter did not read)"}
    if set(bound.values()) != {"server"}:
        where = ", ".join(f"{label} on the {ROLE_NAMES[role]}" for label, role in bound.items() if role)
        return {"rule": f"as measured: not every side bound on the server's CPU ({where} CPU)"}
    rates = {label: [a["rps"] / a["cpu"]["speed"]["server"] for a in side] for label, side in sides.items()}
    meter = [
        round(o["cpu"]["speed"]["server"] / t["cpu"]["speed"]["server"], 4)
        for o, t in zip(sides["ours"], sides["theirs"], strict=True)
    ]
    out = {"rule": "on the server CPU's speed", **summary(rates["ours"], rates["theirs"])}
    out["meter"] = {"median_ratio": round(stats.median(meter), 4), "interval": stats.median_interval(meter)}
    if "again" in rates:
        out["again"] = again_summary(rates["ours"], rates["again"])
    return out

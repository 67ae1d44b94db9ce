"""What the sampler saw of a role's processes, per attempt (`Sample`) and over a record's attempts (`SampleSummary`),
as results.json holds them: kept apart from harness/results/records.py, which reads and writes them with the records."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Self


def with_present(out: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """`out` with each of `optional` that is set (not None, empty or zero), in order: results.json leaves out the
    optional fields a record or an attempt lacks."""
    out.update({name: value for name, value in optional.items() if value})
    return out


class FlatFields:
    """A dataclass of plain values, read from a dict of its fields; fields a file lacks (older files lack some,
    hand-made ones more) take their defaults."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        # its subclasses are dataclasses; FlatFields itself is not, which mypy cannot know
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})  # type: ignore[arg-type]


@dataclass
class Sample(FlatFields):
    """What the sampler saw of one role's processes ("server", "loadgen", "idle_servers") during an attempt."""

    cores: int | None = None
    cpu_s: float | None = None
    cpu_util: float | None = None
    peak_rss_mb: float | None = None
    rss_mb_timeline: list[list[float]] | None = None  # [seconds since the attempt began, RSS MB], once a second
    run_delay_s: float | None = None  # its threads' time runnable but waiting for a CPU (others' work on its cores)
    steal_s: float | None = None  # the hypervisor's steal on its CPUs meanwhile (ticks of 10 ms)
    cpu_speed: float | None = None  # its CPUs' share of full speed meanwhile (CPU_METER=1; basics/cpu_speed.py)

    def to_dict(self) -> dict[str, Any]:  # unset, the fields older harnesses lacked stay out: their files as they were
        newer = ("rss_mb_timeline", "run_delay_s", "steal_s", "cpu_speed")
        return {k: v for k, v in asdict(self).items() if v is not None or k not in newer}


@dataclass
class SampleSummary(FlatFields):
    """One role over a record's attempts: the median CPU utilisation and the peak RSS."""

    cpu_util: float | None = None
    peak_rss_mb: float | None = None

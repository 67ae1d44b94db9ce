"""Two builds of one server measured in the same rounds (`make versus`): head ÷ base per round, the interval of that
ratio, and the verdict in words.

Why paired rounds: the machine drifts (a 2-core VM's 1 s figures wander by a third within a minute), and two sittings
differ more (a whole machine read 0.77× as fast one day as the day before). Measured in the same round, one right
after the other in an order drawn at random, base and head share the drift, so the ratio of a round carries little of
it (duet benchmarking, Bulej et al. ICPE 2020; randomized interleaved trials, Abedi & Brecht ICPE 2017).

Starts: a process keeps its own speed for its whole life (where its JIT compiled, how its heap and its code landed in
memory: Georges et al. OOPSLA 2007, Mytkowicz et al. ASPLOS 2009), so rounds of one pair of processes share a
difference that no count of rounds averages out: two node processes of one build read 14 % apart over 62 rounds
(batch means put that run's standard error at twice the rounds' own). A sitting therefore starts both builds afresh
several times, and the rounds of each start are one group (Kalibera & Jones, ISMM 2013: repeat at the level whose
variation matters).

The interval: the rounds' ratios r_i = head_i / base_i are summarised by their geometric mean. With two starts or
more, each start's mean of ln r_i is one observation, and the interval is Student's t interval of their mean, taken
back with exp:
    exp(mean ± t(1 − α/2; s − 1) · sd / √s)      (s starts)
so that a process's own difference counts as much as it varies from start to start. With a single start, the same
interval over its rounds (n rounds, n − 1 degrees of freedom) is all there is, and it is labelled so: it leaves out
how two processes of one build differ. A ratio is symmetric on the log scale (2× faster and 2× slower are ±ln 2), and
the mean of logs of paired ratios is the usual paired comparison of a multiplicative change.

The verdict: where the interval lies wholly above 1 (req/s) the head is faster, wholly below it slower; where it holds
1, "no difference beyond ±x %", x being the farthest end of the interval from no change: a difference of that size
is not excluded, a larger one is. The resolution a sitting reached is the interval's half-width (exp of t·sd/√n,
minus 1): how many starts a sitting takes is the clock's choice (harness/stats/sitting_shape.py), never the interval's.

An A/A is a sitting of one build against itself (`make versus BASE=HEAD` on a clean tree): two processes of the same
code, so that the process-to-process spread is in it; its interval excludes 1 for 5 % of such sittings at most
(tests/test_versus_design.py simulates the rule; docs/versus.md gives the sittings measured here). Splitting one build's
own rounds in two, as an earlier pass did, saw one process only, and is gone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LEVEL = 0.95
# per metric: whether a higher value is better, and the words for "the head's is higher" and "lower"
METRICS = {
    "rps": (True, "req/s", "faster", "slower"),
    "p99": (False, "p99", "higher p99", "lower p99"),
    "cost_us": (False, "CPU µs/req", "costlier", "cheaper"),
}


def t_cdf_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with `df` (≥ 1) degrees of freedom, exact for integer df (the closed forms in
    Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: (2/π)(θ + sinθ·cosθ·(1 + 2/3 cos²θ + ... + (2·4…(df−3))/(1·3…(df−2)) cos^(df−3)θ))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0  # even: sinθ·(1 + 1/2 cos²θ + (1·3)/(2·4) cos⁴θ + ... )
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(level: float, df: int) -> float:
    """The t such that P(|T| < t) = level (two-sided), by bisection on the exact CDF."""
    low, high = 0.0, 1.0
    while t_cdf_two_sided(high, df) < level:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf_two_sided(mid, df) < level else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True)
class RatioInterval:
    """head ÷ base over `n` paired rounds: the geometric mean `ratio` and its interval [low, high] at `level`."""

    ratio: float
    low: float
    high: float
    n: int  # rounds
    level: float = LEVEL
    starts: int = 1  # the groups the interval is taken over (1: over the rounds of one start)

    @property
    def half_width(self) -> float:
        """The resolution reached, as a fraction: half the interval's width on the log scale, as a ratio − 1."""
        return math.sqrt(self.high / self.low) - 1

    def excludes_no_change(self) -> bool:
        return self.low > 1 or self.high < 1

    def to_dict(self) -> dict[str, float | int | str]:
        method = (
            f"t over the {self.starts} starts' mean ln(head/base)"
            if self.starts > 1
            else "paired t on ln(head/base) over the rounds of one start (how two processes differ is left out)"
        )
        return {
            "ratio": round(self.ratio, 5),
            "low": round(self.low, 5),
            "high": round(self.high, 5),
            "n": self.n,
            "starts": self.starts,
            "level": self.level,
            "half_width": round(self.half_width, 5),
            "method": method,
        }

    def extent(self) -> str:
        """How much the interval rests on: "30 rounds in 6 starts", or "8 rounds, one start"."""
        return f"{self.n} rounds in {self.starts} starts" if self.starts > 1 else f"{self.n} rounds, one start"


def _t_interval(logs: list[float], level: float) -> tuple[float, float, float]:
    """exp of the mean of `logs` (two or more) and of its Student t interval's ends."""
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    margin = t_quantile(level, n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - margin), math.exp(mean + margin)


def ratio_interval(ratios: list[float], level: float = LEVEL) -> RatioInterval | None:
    """The interval of the geometric mean of `ratios` (see the module's docstring); None with fewer than two."""
    logs = [math.log(r) for r in ratios if r and r > 0]
    return RatioInterval(*_t_interval(logs, level), len(logs), level) if len(logs) >= 2 else None


def grouped_interval(groups: list[list[float]], level: float = LEVEL) -> RatioInterval | None:
    """The interval by starts (see the module's docstring): `groups` holds each start's ratios; starts without one
    are left out. Over the rounds of the one start there is when only one has ratios; None without two ratios."""
    logs = [[math.log(r) for r in group if r and r > 0] for group in groups]
    logs = [group for group in logs if group]
    rounds = sum(len(group) for group in logs)
    if len(logs) < 2:
        flat = [x for group in logs for x in group]
        return RatioInterval(*_t_interval(flat, level), rounds, level) if rounds >= 2 else None
    means = [sum(group) / len(group) for group in logs]
    return RatioInterval(*_t_interval(means, level), rounds, level, len(means))


def paired_ratios(base: dict[int, float | None], head: dict[int, float | None]) -> list[float]:
    """head ÷ base for every round (key) where both have a positive value, in round order."""
    out = []
    for n in sorted(base):
        b, h = base[n], head.get(n)
        if b and h:
            out.append(h / b)
    return out


def start_ratios(
    base: dict[int, float | None], head: dict[int, float | None], starts: list[list[int]]
) -> list[list[float]]:
    """head ÷ base per round (paired_ratios), one list per start of `starts` (the rounds each holds): what
    grouped_interval takes."""
    return [paired_ratios({n: base[n] for n in rounds if n in base}, head) for rounds in starts]


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}"


def verdict(interval: RatioInterval | None, metric: str = "rps", names: tuple[str, str] | None = None) -> str:
    """The answer in words: "faster by 4.1 % (2.0–6.3 %, 95 %)", "slower by …", "no difference beyond ±1.8 %"
    (cost: "cheaper"/"costlier", p99: "lower p99"/"higher p99"). `names` (A, B; head ÷ base is B ÷ A): "B faster than
    A by 4.1 % (…)"."""
    if interval is None:
        return "not enough rounds for an interval (two are needed)"
    _, _, up, down = METRICS[metric]
    level = f"{interval.level * 100:g} %"
    than = (lambda word: f"{names[1]} {word} than {names[0]}") if names else (lambda word: word)
    if interval.low > 1:  # the head's value is higher
        return (
            f"{than(up)} by {_pct(interval.ratio - 1)} % ({_pct(interval.low - 1)}–{_pct(interval.high - 1)} %, "
            f"{level})"
        )
    if interval.high < 1:
        return (
            f"{than(down)} by {_pct(1 - interval.ratio)} % ({_pct(1 - interval.high)}–{_pct(1 - interval.low)} %, "
            f"{level})"
        )
    reach = max(interval.high - 1, 1 - interval.low)
    ratio = f"{names[1]} ÷ {names[0]}" if names else "head ÷ base"
    if reach >= 1:  # an interval from near 0× to 2× and beyond: too few rounds to bound the change at all
        return (
            f"not resolved: {ratio} lies within {interval.low:.2g}×–{interval.high:.3g}× ({level}, {interval.extent()})"
        )
    return f"no difference beyond ±{_pct(reach)} % ({level}, {interval.extent()})"

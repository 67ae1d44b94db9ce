"""What a load against the calibrated server (calibrated/, docs/calibrate.md) must measure, known from its
settings and the load before anything runs, and the judgement of what a tool measured against it.

The server's settings per request: a service time S, 1 request in k held D longer, a CPU burn B (a busy loop answers one
request every B, its own HTTP work inside it), a rate cap R (all requests together). On N server cores:
- a closed loop of c connections runs at the lowest of its bounds: c / (S + D/k) (the sleeps: neither the server's CPU
  nor the tool is the limit), N / B (the server's CPU: the server is the limit), R (the cap); with none of them (no
  sleep, no burn, no cap) the tool is the limit and its rate is whatever the tool can send;
- an open loop offered r requests per second (under every bound) runs at r.
Latencies: sleep-bound, two values, S for (k-1)/k of the requests and S + D for 1/k; cap-bound, every request waits
its turn among c, c / R; CPU-bound, c requests share N cores, c·B/N each.
The tools' own inexactness is known too and said beside each figure (`tool_notes`): ab's percentile table in whole
milliseconds, wrk's correction of coordinated omission (it adds samples for every answer slower than its expected
interval), httperf's lack of percentiles, Gatling's millisecond resolution and new connection per user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.results import flag_kinds as kinds

# tolerances of issue 32: req/s within 2 %, percentiles within 5 % or 0.2 ms, CPU per request within 10 % of the burn
RATE_TOLERANCE = 0.02
LATENCY_TOLERANCE = 0.05
LATENCY_FLOOR_MS = 0.2
COST_TOLERANCE = 0.10
FIGURES = ("p50", "p90", "p99", "p99.9", "max", "mean")  # every latency figure a record keeps, each judged
# what a tool does not give, by construction (any other figure it lacks is a miss: a parser that lost it)
NOT_GIVEN = {"httperf": ("p50", "p90", "p99", "p99.9", "max"), "gatling": ("p90", "p99.9")}
BUSY = kinds.LOADGEN_SATURATED  # a side at this share of its cores is busy (the loadgen-saturated flag's threshold)
OPEN_LOOP_TOOLS = ("gatling",)  # always an open loop; oha is one when given a rate
TOOL_LIMIT, SERVER_LIMIT, PACE_LIMIT, CAP_LIMIT = "tool", "server", "pace", "cap"


@dataclass(frozen=True)
class ServerSettings:
    """The calibrated server's settings for one load (its /hello query), in µs and requests per second."""

    service_us: int = 0
    every: int = 0
    delay_us: int = 0
    burn_us: int = 0
    cap: int = 0
    fail_every: int = 0  # 1 answer in this many a 503 (the request numbers 0 modulo it, all connections together)

    def query(self) -> str:
        """The /hello query that asks for these settings (the zero ones left out)."""
        parts = [f"{name}={value}" for name, value in self.__dict__.items() if value]
        return "?" + "&".join(parts) if parts else ""


@dataclass(frozen=True)
class Known:
    """What a load must measure: its rate (None: the tool's own maximum, not known in advance), the latency
    distribution as (ms, share) points (empty: not known), the server's CPU µs per request where it is the limit,
    and what limits it."""

    limit: str
    rps: float | None
    latencies: tuple[tuple[float, float], ...] = ()
    cost_us: float | None = None
    why: str = ""
    connections: int | None = None  # a closed loop's: how many requests are in flight


def percentile(points: tuple[tuple[float, float], ...] | list[tuple[float, float]], pct: float) -> float | None:
    """The pct-th percentile of a distribution given as (value, weight) points: the smallest value with at least pct %
    of the weight at or below it (nearest rank)."""
    total = sum(w for _, w in points)
    if not points or total <= 0:
        return None
    running = 0.0
    for value, weight in sorted(points):
        running += weight
        if running >= total * pct / 100 * (1 - 1e-12):
            return value
    return max(v for v, _ in points)


def _two_point(s: ServerSettings) -> tuple[tuple[float, float], ...]:
    service_ms = max(s.service_us, s.burn_us) / 1000
    if s.every and s.delay_us:
        slow = 1 / s.every
        return ((service_ms, 1 - slow), ((s.service_us + s.delay_us) / 1000, slow))
    return ((service_ms, 1.0),)


def figure_ms(points: tuple[tuple[float, float], ...], name: str) -> float | None:
    """A latency figure ("p99", "max", "mean") of a distribution given as (ms, share) points; None where none is known."""
    if not points:
        return None
    if name == "max":
        return max(v for v, _ in points)
    if name == "mean":
        return sum(v * w for v, w in points) / sum(w for _, w in points)
    return percentile(points, float(name[1:]))


def known(s: ServerSettings, concurrency: int, server_cores: int, offered_rps: float | None = None) -> Known:
    """What a load of `concurrency` connections (closed loop) or `offered_rps` (open loop) on `server_cores` cores
    must measure against settings `s`."""
    cpu_bound = min(concurrency or server_cores, server_cores) * 1e6 / s.burn_us if s.burn_us else math.inf
    cap = s.cap or math.inf
    if offered_rps:
        if offered_rps >= min(cpu_bound, cap):
            return Known(
                SERVER_LIMIT if cpu_bound <= cap else CAP_LIMIT,
                min(cpu_bound, cap),
                (),
                s.burn_us or None,
                f"offered {offered_rps:g}/s is beyond the server's bound",
            )
        return Known(
            PACE_LIMIT,
            offered_rps,
            _two_point(s),
            None,
            f"open loop: the offered {offered_rps:g}/s, under every bound of the server",
        )
    cycle_us = s.service_us + (s.delay_us / s.every if s.every else 0)
    pace = concurrency * 1e6 / cycle_us if cycle_us else math.inf
    bound = min(pace, cpu_bound, cap)
    if bound == math.inf:
        return Known(TOOL_LIMIT, None, (), None, "no sleep, burn or cap: the tool is the limit")
    if bound == cpu_bound and (s.service_us or s.every or s.cap):
        return Known(SERVER_LIMIT, bound, (), s.burn_us, "CPU-bound with sleeps or a cap as well: no latency known")
    if bound == cpu_bound:
        return _cpu_bound(s, concurrency, server_cores, bound)
    if bound == cap:
        return Known(
            CAP_LIMIT,
            bound,
            ((concurrency * 1000 / s.cap, 1.0),),
            None,
            f"the cap: {concurrency} connections wait their turn at {s.cap}/s",
        )
    return Known(
        PACE_LIMIT,
        bound,
        _two_point(s),
        None,
        f"{concurrency} connections, each a request every {cycle_us / 1000:g} ms (S + D/k)",
        concurrency,
    )


def _cpu_bound(s: ServerSettings, concurrency: int, server_cores: int, bound: float) -> Known:
    """c connections on N cores burning B each: exact on one core (c·B each, 1/B); on N cores only where c is a
    multiple of N and the connections spread evenly over the server's loops, which the kernel does not promise
    (EPOLLEXCLUSIVE wakes one loop, not a balanced one): then said, and the latency known; otherwise the rate is
    min(c, N)/B at best and the latency not known."""
    if server_cores == 1:
        return Known(
            SERVER_LIMIT,
            bound,
            ((concurrency * s.burn_us / 1000, 1.0),),
            s.burn_us,
            f"{concurrency} requests share 1 core, {s.burn_us} µs of CPU each",
        )
    if concurrency % server_cores:
        return Known(
            SERVER_LIMIT,
            bound,
            (),
            s.burn_us,
            f"{concurrency} connections cannot spread evenly over {server_cores} loops: the rate at best, "
            "no latency known",
        )
    return Known(
        SERVER_LIMIT,
        bound,
        ((concurrency * s.burn_us / server_cores / 1000, 1.0),),
        s.burn_us,
        f"{concurrency} requests share {server_cores} cores, {s.burn_us} µs of CPU each, if their "
        f"connections spread evenly over its {server_cores} loops (not promised by the kernel)",
    )


def expected_most(calls: int, share: float, connections: int) -> float:
    """The expected largest count among `connections` independent Binomial(`calls`, `share`) counts: how many of its
    calls the unluckiest connection has delayed, E[max] = Σ_j (1 − F(j)^c)."""
    cumulative, total = 0.0, 0.0
    for j in range(calls + 1):
        cumulative = min(1.0, cumulative + math.comb(calls, j) * share**j * (1 - share) ** (calls - j))
        total += 1 - cumulative**connections
    return total


def wrk_corrected(points: tuple[tuple[float, float], ...], interval_ms: float) -> list[tuple[float, float]]:
    """The distribution wrk 4.1 reports for `points`: its stats_correct() adds, for every sample v ≥ 2·I (I: a
    connection's mean time per request, runtime ÷ (requests ÷ connections)), samples v-I, v-2I, ... while above I,
    as if the requests a slow answer held up had been sent on time."""
    out = list(points)
    for value, weight in points:
        if value < 2 * interval_ms:
            continue
        m = value - interval_ms
        while m > interval_ms:
            out.append((m, weight))
            m -= interval_ms
    return out


@dataclass
class Figure:
    """One figure judged: known and measured, whether it is within tolerance (None: not judged), and why not."""

    name: str
    known: float | bool | None
    measured: float | bool | None
    ok: bool | None
    note: str = ""
    ideal: float | None = None  # the construction's, where `known` is what the server itself saw (a closed loop's rate)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"figure": self.name, "known": self.known, "measured": self.measured, "ok": self.ok}
        return out | {"note": self.note} | ({} if self.ideal is None else {"ideal": self.ideal})


@dataclass
class Observed:
    """What a record measured, as the judgement needs it."""

    rps: float | None
    latency_ms: dict[str, float | None] = field(default_factory=dict)  # p50, p99 and where the tool gives it p99.9
    cost_us: float | None = None
    saturated: bool = False
    server_util: float | None = None
    loadgen_util: float | None = None
    server_wait_ms: float | None = None  # its threads' time runnable but waiting for a CPU, over the attempts
    server_steal_ms: float | None = None  # the hypervisor's steal on its CPUs over the attempts (10 ms ticks)
    duration_s: float | None = None  # of the load the rate was counted over


def judge_rate(k: Known, m: Observed) -> Figure:
    if k.rps is None:
        return Figure("req/s", None, m.rps, None, "the tool's own maximum: not known in advance")
    if m.rps is None:
        return Figure("req/s", round(k.rps, 1), None, False, "nothing measured")
    off = m.rps / k.rps - 1
    ok = abs(off) <= RATE_TOLERANCE
    note = "" if ok else f"{off:+.1%}"
    if not ok and k.limit == PACE_LIMIT and off < 0 and k.connections and m.duration_s:
        # the same share at S = 10 and 40 ms (ab -3.7 / -3.1 %, httperf -8.1 / -7.5 %): a fixed time, not a cost per
        # request or per cycle
        lost_ms = -off * m.duration_s * 1000
        note += (
            f": as if {lost_ms:.0f} ms of the {m.duration_s:.1f} s carried no requests (the load's ends: a tool "
            "that opens its connections one by one starts late, the wait for the last answers counts); a fixed "
            "loss shrinks with a longer load"
        )
    elif not ok and k.limit == CAP_LIMIT and off < 0:
        note += (
            ": slots that passed with no request waiting are lost (the cap catches up only those a stall of under "
            "20 ms passed while requests waited), so a longer stall of the machine or the tool costs rate"
        )
    elif not ok and k.limit == SERVER_LIMIT and off < 0:
        note += ": the server spends more than its burn per request (its own HTTP work)"
        if m.server_util is not None and m.server_util < BUSY:
            note = (
                f"{off:+.1%}: the server had {fmt_share(m.server_util)} of its cores, not all of them (other processes "
                f"took the rest): at that share the known rate is {k.rps * m.server_util:,.0f} req/s"
            )
    return Figure("req/s", round(k.rps, 1), m.rps, ok, note)


def judge_latency(
    name: str, known_ms: float | None, measured_ms: float | None, tool_note: str = "", given: bool = True
) -> Figure:
    """`given`: whether the tool gives this figure at all; one it gives and did not is a miss (a parser that lost
    it), one it never gives is n/a."""
    if known_ms is None:
        return Figure(name, None, measured_ms, None, "not known for this load")
    if measured_ms is None:
        if given:
            return Figure(
                name, round(known_ms, 3), None, False, "missing: the tool gives this figure, the record has none"
            )
        return Figure(name, round(known_ms, 3), None, None, tool_note or "the tool does not give it")
    off = measured_ms - known_ms
    ok = abs(off) <= max(LATENCY_TOLERANCE * known_ms, LATENCY_FLOOR_MS)
    note = "; ".join(n for n in ("" if ok else f"{off:+.3f} ms ({off / known_ms:+.1%})", tool_note) if n)
    return Figure(name, round(known_ms, 3), measured_ms, ok, note)


def latency_context(k: Known, m: Observed, known_ms: float | None, miss_ms: float | None = None) -> str:
    """Why a latency may miss that the figures themselves show: a saturated tool queues its own requests; a server
    given less than its cores takes proportionally longer per request; `miss_ms` (measured − known) beside the
    server's waits for a CPU."""
    if m.saturated and k.limit != TOOL_LIMIT:
        return (
            f"the tool was saturated ({fmt_share(m.loadgen_util)} of its CPU): its own queueing is in these latencies"
        )
    if k.limit == SERVER_LIMIT and known_ms and m.server_util and m.server_util < BUSY:
        return f"at the {fmt_share(m.server_util)} of its cores the server had, the known latency is {known_ms / m.server_util:.1f} ms"
    return cpu_wait_context(m, miss_ms)


def cpu_wait_context(m: Observed, miss_ms: float | None = None) -> str:
    """The server's waits for a CPU: its threads' run delay (others' work on its cores) and the hypervisor's steal
    (another guest's work on the host's cores). A wait of t ms holds every request in flight t ms longer, so a tail
    above the known one by about that much is the machine's, not the tool's; waits that add up to less than one
    request's miss cannot be its cause."""
    if m.server_wait_ms is None:
        return ""
    steal = (
        ""
        if m.server_steal_ms is None
        else (f", and the hypervisor stole {m.server_steal_ms:.0f} ms of its CPUs (/proc/stat, 10 ms ticks)")
    )
    if m.server_wait_ms < 0.1 and not m.server_steal_ms:
        return (
            f"the server never waited for its CPU (run delay 0{steal}): the tail is on the tool's side or below "
            "what the machine shows"
        )
    waited = (
        f"the server's threads waited {m.server_wait_ms:.1f} ms in all for a CPU while runnable (other work on its "
        f"cores, /proc schedstat){steal}"
    )
    if miss_ms is not None and m.server_wait_ms + (m.server_steal_ms or 0) < abs(miss_ms):
        return (
            f"{waited}: less in all than this one figure's {miss_ms:+.3f} ms, so not its cause; the rest is "
            "elsewhere: the tool's side, the server's order of service, or a stall of the whole virtual machine "
            "shorter than steal's 10 ms ticks"
        )
    return f"{waited}: each wait holds every request in flight that much longer"


def judge_failures(fail_every: int, requests: int, counted: int, in_flight: int, tool_note: str = "") -> Figure:
    """The 503s a tool counted (non_2xx) against 1 in `fail_every` of its `requests`: the server numbers requests
    over all connections, so an attempt's answers hold requests/m of them to within one, give or take the answers
    still `in_flight` (up to one per connection, per attempt) when a timed tool stops counting."""
    known = requests / fail_every
    slack = 1 + in_flight / fail_every
    ok = abs(counted - known) <= slack
    note = "; ".join(
        n for n in ("" if ok else f"{counted - known:+.0f} against 1 in {fail_every} (±{slack:.0f})", tool_note) if n
    )
    return Figure("non_2xx", round(known, 1), counted, ok, note)


def judge_cost(k: Known, m: Observed) -> Figure:
    if k.limit != SERVER_LIMIT or not k.cost_us:
        return Figure("CPU µs/req", k.cost_us, m.cost_us, None, "judged only where the server is the limit")
    if m.cost_us is None:
        return Figure("CPU µs/req", k.cost_us, None, False, "the server's CPU was not sampled")
    off = m.cost_us / k.cost_us - 1
    ok = abs(off) <= COST_TOLERANCE
    if ok:
        note = ""
    elif off > 0:
        note = (
            f"{off:+.1%}: the server's own work per request (parsing, syscalls, a thread's wake-up) "
            f"is {m.cost_us - k.cost_us:.0f} µs beside the burn"
        )
    else:
        note = (
            f"{off:+.1%}: a busy loop answers one request every B of wall time, so the time its core went to others "
            f"(its threads waited {m.server_wait_ms or 0:.1f} ms in all for a CPU) is CPU it did not spend"
        )
    return Figure("CPU µs/req", k.cost_us, m.cost_us, ok, note)


def judge_flag(k: Known, m: Observed, flag_name: str) -> Figure:
    expected = k.limit == TOOL_LIMIT
    ok = expected == m.saturated
    shares = (
        f"server at {fmt_share(m.server_util)} of its cores, the tool at {fmt_share(m.loadgen_util)} of what it can use"
    )
    if ok:
        return Figure(flag_name, expected, m.saturated, ok, shares)
    if expected and m.server_util is not None and m.server_util >= BUSY:  # the premise, checked: it did not hold
        return Figure(
            flag_name,
            expected,
            m.saturated,
            None,
            f"not judged: the load's premise did not hold here, the server reached its cores too ({shares}; "
            f"{m.cost_us or 0:.0f} µs of CPU per request costs it about what this tool spends), so either "
            "side could be the limit: a miss of the plan on this machine, not of the flag",
        )
    note = (
        f"{flag_name} {'did not fire' if expected else 'fired'} although the "
        f"{'tool' if expected else k.limit} was the limit by construction: {shares}"
    )
    if expected and all(u is not None and u < BUSY for u in (m.server_util, m.loadgen_util)):
        note += (
            "; neither side kept its cores busy, so other processes took them (the machine is not quiet) or the "
            "tool waits on something else than its CPU"
        )
    return Figure(flag_name, expected, m.saturated, ok, note)


def fmt_share(value: float | None) -> str:
    """A share of a side's cores in words: "93%", "?" when not sampled."""
    return "?" if value is None else f"{value:.0%}"

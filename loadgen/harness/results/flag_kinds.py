"""Every flag a record can carry, in the order flags are reported: its name, what it means, whether it keeps the record
out of the ranking, whether it makes the figure a lower bound, and its colour and severity in the reports. The one
list the rules (judging/flags.py), the ranking (judging/ranking.py) and every report (HTML, Markdown, terminal) read.
The thresholds the explanations quote are defined here too, beside the words that quote them."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.manifest import UPSTREAM_PATH

LOADGEN_SATURATED = 0.90  # a tool process's share of its core, a tool's of the cores it can use, the cores' in all
SERVER_BUSY = 0.90  # a server at least this busy explains a busy load generator: not flagged
UPSTREAM_MARGIN = 0.10  # weather within 10 % of (or above) the upstream's own /weather.json figure
SPREAD_MAX_CV = 0.10  # req/s coefficient of variation over the attempts
SPREAD_MAX_HALF_WIDTH = 0.10  # the median's interval: (high − low) > 2 × this × median is flagged
RATE_HELD = 0.99  # an open-model step's achieved rate must be at least this share of the offered
TREND_TOLERANCE = 0.10  # attempts whose trend moves req/s more than this over the series are warming or drifting


@dataclass(frozen=True)
class FlagKind:
    name: str
    explanation: str
    excludes: bool = False  # keeps the record out of the ranking
    lower_bound: bool = False  # the req/s figure is a lower bound of the server's (shown ≥)
    colour: str = "#57606a"  # the HTML badge
    severe: bool = False  # shown red in the terminal (else yellow)
    why_out: str = ""  # how the list of what keeps records out names it


FAILED = FlagKind(
    "failed", "an attempt produced no measurement", excludes=True, colour="#7f1d1d", severe=True, why_out="failures"
)
INCOMPLETE = FlagKind(
    "incomplete",
    "the run ended (interrupted) before all of the record's attempts were taken: what was measured is "
    "kept, but too few attempts to order it against the others",
    excludes=True,
    colour="#57606a",
    why_out="a run that ended before the record's last attempt",
)
CONTRACT_FAILED = FlagKind(
    "contract-failed",
    "the server failed (or was not given) this run's contract verification",
    excludes=True,
    colour="#7f1d1d",
    severe=True,
    why_out="a failed contract",
)
OUTSIDE = FlagKind(
    "outside",
    "an outside implementation (make twin's entry, another project's code): never checked against this project's "
    "contract, so never ranked among the servers that are; its figures are its sitting's other side",
    excludes=True,
    colour="#57606a",
    why_out="an outside implementation, not held to the contract",
)
ERRORS = FlagKind(
    "errors",
    "some requests failed (connect, read, write, timeout, non-2xx, length, other): the rate counts them",
    excludes=True,
    colour="#b91c1c",
    severe=True,
    why_out="errors",
)
LOADGEN_BOUND = FlagKind(
    "loadgen-saturated",
    f"the load generator was busy (a tool process at ≥ {LOADGEN_SATURATED:.0%} of its core, a multi-threaded tool at "
    f"≥ {LOADGEN_SATURATED:.0%} of the cores it can use, or its cores at ≥ {LOADGEN_SATURATED:.0%} with what else "
    f"runs there) while the server used less than {SERVER_BUSY:.0%} of its own: the number measures the tool, so it is "
    "a lower bound of the server's (shown ≥), and the server's CPU per request orders such servers",
    lower_bound=True,
    colour="#c2410c",
)
RATE_NOT_HELD = FlagKind(
    "rate-not-held",
    f"the load generator sent less than {RATE_HELD:.0%} of the rate it was asked to offer while the "
    f"server used less than {SERVER_BUSY:.0%} of its CPUs (or the generator was saturated): the step "
    "measures the tool, not the server, and is never read as the server's limit",
    excludes=True,
    colour="#9a3412",
    why_out="an open-model step whose rate was not held",
)
UPSTREAM_BOUND = FlagKind(
    "upstream-limit",
    f"a weather figure within {UPSTREAM_MARGIN:.0%} of (or above) the upstream's own {UPSTREAM_PATH} "
    "at the same load in the same run: the upstream is the limit, not the server, so the figure is "
    "a lower bound of the server's (shown ≥)",
    lower_bound=True,
    colour="#6d28d9",
)
UNSETTLED = FlagKind(
    "unsettled",
    f"the warm-up hit its cap (its most runs or seconds) while req/s still climbed (a trend of more than "
    f"its tolerance, {TREND_TOLERANCE:.0%} in the quick profile, over its latest runs): the attempts were "
    "taken on a server not yet warm, and the median may understate it",
    colour="#155e75",
)
WARMING = FlagKind(
    "warming",
    f"the attempts still climb (a trend of more than {TREND_TOLERANCE:.0%} over them, the "
    "attempts agreeing on the direction; each taken against the other servers of its round "
    "where three or more were measured in the same rounds, so a climb the machine gave them "
    "all is not one): the server was not yet warm; the median understates it",
    colour="#0e7490",
)
DRIFTING = FlagKind(
    "drifting",
    f"the attempts fall (a trend of more than {TREND_TOLERANCE:.0%} over them, the attempts "
    "agreeing on the direction; against the other servers of its rounds, as for warming): "
    "the server slowed down during the measurement, or the machine did for its turns",
    colour="#0e7490",
)
SPREAD = FlagKind(
    "spread",
    f"truly unsteady: req/s varies more than {SPREAD_MAX_CV:.0%} between attempts (coefficient of "
    f"variation), or the median's confidence interval is wider than ±{SPREAD_MAX_HALF_WIDTH:.0%} of the "
    "median; or a single attempt was made, so nothing is known of its spread. Smaller noise is not flagged: "
    "it widens the interval, and servers whose intervals overlap get ranges of places (1–3)",
    colour="#a16207",
)
MIX_SHARES = FlagKind(
    "mix-shares",
    "a request mix whose paths were not sent in the shares their weights ask: a share more than 4 "
    "binomial standard errors from its weight (a fair random draw strays that far about 6 times in "
    "100,000); the endpoints' figures are of another blend than the one named",
    colour="#7c2d12",
)

ALL = (
    FAILED,
    INCOMPLETE,
    CONTRACT_FAILED,
    OUTSIDE,
    ERRORS,
    LOADGEN_BOUND,
    RATE_NOT_HELD,
    UPSTREAM_BOUND,
    UNSETTLED,
    WARMING,
    DRIFTING,
    SPREAD,
    MIX_SHARES,
)
BY_NAME = {kind.name: kind for kind in ALL}
EXCLUDING = frozenset(k.name for k in ALL if k.excludes)
LOWER_BOUND = frozenset(k.name for k in ALL if k.lower_bound)


def kept_out() -> str:
    """What keeps a record out of the ranking, in words (every report's heading and note reads this)."""
    causes = [k.why_out for k in ALL if k.excludes]
    return ", ".join(causes[:-1]) + f" or {causes[-1]}, or a single attempt"


def legend() -> list[tuple[str, str]]:
    """(flag, explanation) in the order flags are reported."""
    return [(k.name, k.explanation) for k in ALL]

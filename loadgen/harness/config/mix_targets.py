"""A scenario's targets, read from scenarios.toml: (route, path) pairs in order of preference, each route one of
CONTRACT.md's and each path one a URL takes as it is (`PATH`); or a request mix, a weighted list of routes sent to one
server in one load (docs/mixes.md). Weights are percentages of the requests: positive, in steps of 0.1, summing to 100. The load tool
draws each request's target from a list in which each path is repeated in proportion to its weight (oha picks a line
uniformly per request: harness/tools/oha_mix.py)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from harness.config.manifest import CONTRACT_ROUTES

WHOLE = 100.0  # the weights' sum: percent of the mix's requests
STEP = 0.1  # a weight's resolution, so the repeated list stays short (at most 1,000 lines)
# a path the tools append to http://host:port as it is: from the root, printable ASCII, no space, no fragment
PATH = re.compile(r"/[!\"$-~]*")
TARGET_KEYS = ("route", "path", "weight")


class MixError(ValueError):
    """A scenario's targets that cannot be measured: one line naming the scenario and the key."""


def path_problem(path: object) -> str | None:
    """Why `path` is not one a tool can send (None: it is)."""
    if isinstance(path, str) and PATH.fullmatch(path):
        return None
    return f'path = {path!r} must be a text starting with / (printable ASCII, no space or #), e.g. path = "/hello"'


def parse_targets(raw_targets: object, where: str) -> tuple[tuple[str, str], ...]:
    """A scenario's `targets` checked, mix or not: a list of tables, each a CONTRACT.md route and a path (a weight
    only in a mix: parse_mix)."""
    if not isinstance(raw_targets, list) or not raw_targets or not all(isinstance(t, dict) for t in raw_targets):
        raise MixError(
            f"{where}: `targets` must list the routes it measures, e.g. "
            'targets = [{ route = "hello", path = "/hello" }]'
        )
    for index, raw in enumerate(raw_targets):
        at = f"{where} targets[{index}]"
        unknown = sorted(set(raw) - set(TARGET_KEYS))
        if unknown:
            raise MixError(f"{at}: unknown key {unknown[0]!r}; a target has {', '.join(TARGET_KEYS)}")
        if raw.get("route") not in CONTRACT_ROUTES:
            raise MixError(
                f"{at} route = {raw.get('route')!r} is not a route of CONTRACT.md ({', '.join(sorted(CONTRACT_ROUTES))})"
            )
        wrong = path_problem(raw.get("path"))
        if wrong:
            raise MixError(f"{at} {wrong}")
    return tuple((t["route"], t["path"]) for t in raw_targets)


@dataclass(frozen=True)
class MixTarget:
    route: str  # a route of CONTRACT.md: a server takes part in the mix only when it serves every one of them
    path: str
    weight: float  # percent of the mix's requests


def is_mix(raw_targets: list[dict[str, Any]]) -> bool:
    """A scenario is a mix when its targets carry weights."""
    return any(isinstance(t, dict) and "weight" in t for t in raw_targets)


def parse_mix(raw_targets: list[dict[str, Any]], where: str) -> tuple[MixTarget, ...]:
    """The targets checked: known routes, positive weights in steps of 0.1 summing to 100, no path twice."""
    targets = []
    for index, raw in enumerate(raw_targets):
        at = f"{where} targets[{index}]"
        route, path, weight = raw.get("route"), raw.get("path"), raw.get("weight")
        if route not in CONTRACT_ROUTES:
            raise MixError(
                f"{at} route = {route!r} is not a route of CONTRACT.md ({', '.join(sorted(CONTRACT_ROUTES))})"
            )
        wrong = path_problem(path)
        if wrong:
            raise MixError(f"{at} {wrong}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0 or math.isinf(weight):
            raise MixError(f"{at} weight = {weight!r} must be a positive number (percent of the mix's requests)")
        if abs(weight / STEP - round(weight / STEP)) > 1e-6:
            raise MixError(f"{at} weight = {weight!r} must be a multiple of {STEP:g} (percent)")
        targets.append(MixTarget(route, str(path), float(weight)))  # path is a text: path_problem said so
    paths = [t.path for t in targets]
    if len(set(paths)) != len(paths):
        raise MixError(f"{where} targets: a path is listed twice ({', '.join(paths)}); give each path once")
    total = sum(t.weight for t in targets)
    if abs(total - WHOLE) > 1e-6:
        raise MixError(
            f"{where} targets: the weights sum to {total:g}, not {WHOLE:g} (each is a percent of the mix's requests)"
        )
    return tuple(targets)

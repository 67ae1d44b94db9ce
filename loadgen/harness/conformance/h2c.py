"""The HTTP/2 half of the probe: h2spec (github.com/summerwind/h2spec, the maintained conformance suite for RFC 7540
and RFC 7541, built from its Go module into .tools/go/bin by `make probe`) against a server's h2c port, its JUnit
report read into cases like the HTTP/1.1 suite's. Where it is not built, the h2c part says so and is left out.

A case failed within the whole suite is run again alone, once: some of h2spec's verdicts turn on timing (two probes of
the same builds disagreed on 4 of about 1,000 case runs), and a MUST failure is shown only where it reproduces. One that
passes alone is a skip that says so, neither a pass nor a failure.

A malformed request's case (RFC 7540 §8.1, §8.1.2) that fails is judged again by what the server answers when its
request is sent once more (h2c_replay.py): h2spec does not report a response's status, and the RFC lets a server
answer such a request before closing or resetting its stream."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from harness.basics.paths import REPO
from harness.conformance import h2c_replay

H2SPEC = REPO / ".tools" / "go" / "bin" / "h2spec"
SPECS = {"http2": "RFC 7540", "hpack": "RFC 7541", "generic": "RFC 7540"}
CONTROL_BYTES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
TIMEOUT_S = 180  # the whole run; each of its ~146 cases waits at most 2 s


def binary() -> Path | None:
    found = H2SPEC if H2SPEC.exists() else shutil.which("h2spec")
    return Path(found) if found else None


def run(host: str, port: int, scratch: Path) -> dict[str, Any]:
    """h2spec against host:port (prior knowledge, no TLS), its report kept in `scratch`; the cases, or why none."""
    h2spec = binary()
    if h2spec is None:
        return {
            "tool": None,
            "note": "h2spec is not built (make probe builds it with `go install`); h2c not probed",
            "cases": [],
        }
    report = scratch / f"h2spec-{port}.xml"
    against = [str(h2spec), "-h", host, "-p", str(port), "-o", "2"]
    command = [*against, "-j", str(report)]
    try:
        subprocess.run(command, capture_output=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"tool": "h2spec", "note": f"h2spec did not end in {TIMEOUT_S} s", "cases": []}
    if not report.exists():
        return {"tool": "h2spec", "note": "h2spec wrote no report", "cases": []}
    try:
        found = cases(report.read_text(errors="replace"))
    except ElementTree.ParseError as exc:
        return {"tool": "h2spec", "note": f"h2spec's report could not be read ({exc})", "cases": []}
    failed = [c["id"] for c in found if c["verdict"] == "fail"]
    again = _alone(against, scratch / f"h2spec-{port}-again.xml", failed) if failed else None
    judged = h2c_replay.answered(
        reproduced(found, again), lambda steps: h2c_replay.replay(host, port, steps), f"{host}:{port}"
    )
    return {"tool": "h2spec", "command": " ".join(command), "report": str(report), "cases": judged}


def _alone(against: list[str], report: Path, ids: list[str]) -> str | None:
    """The JUnit report (written to `report`) of h2spec, as `against` runs it, on the cases `ids` alone; None where
    it wrote none."""
    try:
        subprocess.run([*against, "-j", str(report), *ids], capture_output=True, timeout=TIMEOUT_S, check=False)
        return report.read_text(errors="replace") if report.exists() else None
    except subprocess.TimeoutExpired:
        return None


def reproduced(found: list[dict[str, Any]], again: str | None) -> list[dict[str, Any]]:
    """`found`, each failure that passed when run again alone (its case in the report `again`) made a skip that says
    so; as found where there is no report of the run again."""
    try:
        passed = {h2c_replay.section_and_name(c) for c in cases(again) if c["verdict"] == "pass"} if again else set()
    except ElementTree.ParseError:
        passed = set()
    out = []
    for case in found:
        if case["verdict"] == "fail" and h2c_replay.section_and_name(case) in passed:
            got = f"not reproduced: failed within the whole suite ({case['got'][:200]}), passed when run again alone"
            case = {**case, "verdict": "skip", "got": got}
        out.append(case)
    return out


def cases(junit: str) -> list[dict[str, Any]]:
    """h2spec's JUnit report as probe cases: a failure or an error fails, a skipped case (its precondition unmet,
    e.g. a setting the server does not offer) warns."""
    out = []
    # h2spec writes the frames it got into the report as they came, NUL bytes too, which XML does not allow
    for suite in ElementTree.fromstring(CONTROL_BYTES.sub("", junit)).iter("testsuite"):
        package = suite.get("package", "")
        spec, _, section = package.partition("/")
        for number, case in enumerate(suite.iter("testcase"), 1):
            failed = case.find("failure") if case.find("failure") is not None else case.find("error")
            skipped = case.find("skipped") is not None
            out.append(
                {
                    "id": f"{package}/{number}",
                    "category": f"h2c-{spec}",
                    "level": "MUST",
                    "rfc": f"{SPECS.get(spec, spec)} §{section}" if section else SPECS.get(spec, spec),
                    "what": f"{suite.get('name', '')}: {case.get('classname', '')}".strip(": "),
                    "sent": case.get("classname", ""),
                    "expected": "what h2spec expects",
                    "got": "skipped" if skipped else _text(failed) if failed is not None else "as expected",
                    "verdict": "skip" if skipped else "fail" if failed is not None else "pass",
                }
            )
    return out


def _text(element: ElementTree.Element) -> str:
    return " ".join("".join(element.itertext()).split())[:300] or "failed"

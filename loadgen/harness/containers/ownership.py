"""Whose containers these are, on hosts that other harness machines may use too (HOSTS=...). Every container and
volume the several-hosts runtime makes carries the label bench.owner=<id of this machine and checkout>, and only what
carries ours is removed: two harness machines whose checkouts have the same path (/home/bench/bench on both) never
remove each other's containers. bench.checkout (the checkout's path) stays on them, for people reading `docker ps`."""

from __future__ import annotations

import hashlib
import uuid
from functools import cache
from pathlib import Path

from harness.basics.paths import REPO, STATE_DIR

OWNER_LABEL = "bench.owner"
CHECKOUT_LABEL = "bench.checkout"
MACHINE_ID = Path("/etc/machine-id")


@cache
def owner_id(state_dir: Path = STATE_DIR, machine_id: Path = MACHINE_ID) -> str:
    """16 hex digits from this machine's id (/etc/machine-id), the checkout's path and a random id made once and kept
    in .run/owner-id: another machine differs by its machine id (or, a clone of this one, by its own random id), and
    a copy of this checkout by its path."""
    kept = state_dir / "owner-id"
    own = kept.read_text().strip() if kept.exists() else ""
    if not own:
        state_dir.mkdir(parents=True, exist_ok=True)
        own = uuid.uuid4().hex
        try:
            with open(kept, "x") as f:  # a command that made it meanwhile wins
                f.write(own + "\n")
        except FileExistsError:
            own = kept.read_text().strip() or own
    machine = machine_id.read_text().strip() if machine_id.exists() else ""
    return hashlib.sha256(f"{machine}\n{REPO}\n{own}".encode()).hexdigest()[:16]


def owner_labels() -> dict[str, str]:
    return {CHECKOUT_LABEL: str(REPO), OWNER_LABEL: owner_id()}


def owner_filter() -> list[str]:
    """The Docker CLI's filter for what this machine and checkout made (ps, volume ls)."""
    return ["--filter", f"label={OWNER_LABEL}={owner_id()}"]

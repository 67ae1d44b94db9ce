"""Maven properties in what a server's `version` command printed: spray's and socko's poms set
`<scala.version>${scala-2.11.version}</scala.version>`, and a command that reads the module's pom prints the reference,
not the version. Resolved here from the module's pom, then its parents' (the reactor's pom.xml at the top), on the
host, so both runtimes give the same answer (under Docker the command runs in the image, without the parent pom)."""

from __future__ import annotations

import re
from pathlib import Path

REFERENCE = re.compile(r"\$\{([\w.-]+)\}")
MAX_DEPTH = 10  # a property that refers to itself (or a cycle) stays unresolved


def _property(name: str, folder: Path) -> str | None:
    """`<name>value</name>` from the nearest pom.xml at `folder` or above that defines it."""
    for where in (folder, *folder.parents):
        pom = where / "pom.xml"
        if not pom.is_file():
            continue
        found = re.search(rf"<{re.escape(name)}>([^<]*)</{re.escape(name)}>", pom.read_text(errors="replace"))
        if found:
            return found.group(1).strip()
    return None


def resolve_properties(text: str, folder: Path) -> str:
    """`text` with each `${name}` replaced by the property's value from the poms at `folder` and above (references
    in values resolved too); one that no pom defines is left as it is."""
    for _ in range(MAX_DEPTH):
        resolved = REFERENCE.sub(lambda m: _property(m.group(1), folder) or m.group(0), text)
        if resolved == text:
            break
        text = resolved
    return text

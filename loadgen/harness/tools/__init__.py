"""Load tool adapters: each builds its command line from a LoadSpec and parses its output into a Measurement.

The registry: every module of this package that defines `TOOL` (an instance of its adapter class, see
adapter.LoadTool)
is found when the package is imported, so adding a tool means adding one module (docs/extending.md, "Adding a load tool").
A tool defined elsewhere, such as a test's, joins the registry for a while through `register`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from contextlib import contextmanager

from harness.tools.adapter import LoadSpec, LoadTool, ToolFailed, find_binary, tool_version

__all__ = ["TOOLS", "LoadSpec", "LoadTool", "ToolFailed", "find_binary", "register", "tool_version"]


SHARED = {"adapter", "output", "availability", "load_plan"}  # the package's own modules beside the adapters


def _discover() -> dict[str, LoadTool]:
    """Each adapter module's TOOL by its name, in the modules' alphabetical order."""
    found: dict[str, LoadTool] = {}
    for module in pkgutil.iter_modules(__path__, f"{__name__}."):
        if module.name.rsplit(".", 1)[1] in SHARED:
            continue
        tool = getattr(importlib.import_module(module.name), "TOOL", None)
        if tool is None:
            continue
        if tool.name in found:
            raise ValueError(
                f"{module.name} and {type(found[tool.name]).__module__} both name a load tool {tool.name!r}"
            )
        found[tool.name] = tool
    return found


TOOLS: dict[str, LoadTool] = _discover()


@contextmanager
def register(tool: LoadTool) -> Iterator[LoadTool]:
    """`tool` is in TOOLS, so scenarios may name it, until the block ends."""
    if tool.name in TOOLS:
        raise ValueError(f"a load tool named {tool.name!r} is already registered")
    TOOLS[tool.name] = tool
    try:
        yield tool
    finally:
        del TOOLS[tool.name]

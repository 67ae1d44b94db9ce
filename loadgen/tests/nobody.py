"""Run a test's action as the user `nobody` (root writes past any folder's mode and may freeze any process): shared by
the tests that need a user who cannot."""

from __future__ import annotations

import io
import json
import os
import pwd
import sys


def as_nobody(action) -> dict:
    """`action()` in a forked child that has become `nobody` (root writes past any folder's mode): what it printed
    and returned, or the exception that escaped it."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.close(read_end)
        out = {}
        try:
            nobody = pwd.getpwnam("nobody")
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            sys.stdout = io.StringIO()
            out["returned"] = action()
            out["printed"] = sys.stdout.getvalue()
        except BaseException as exc:  # noqa: BLE001 (reported to the parent)
            out["error"] = repr(exc)
        os.write(write_end, json.dumps(out).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        said = json.loads(pipe.read() or "{}")
    os.waitpid(child, 0)
    return said

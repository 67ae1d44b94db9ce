"""Per server, once per run: the size of what it runs (its manifest's `artifacts`) and the lines of code of its
implementation, counted by pygount.

Which files are the implementation:
- a folder holding one server: every file git tracks in it (every file, when git cannot tell), less the
  exclusions below;
- a folder holding several servers (node/ holds node and express): the files that server's `run` command and
  `artifacts` name (folders expanded), less the exclusions.
Excluded: build outputs and dependencies (target/, node_modules/, ...), lockfiles, files pygount recognises as
generated, the harness's own manifest.toml, .gitignore, and documents served as content (nginx's static/).
Text files pygount has no lexer for (HOCON application.conf, nginx.conf.template) are counted as configuration:
non-blank lines that are not `#` or `//` comments.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from harness.config.manifest import Server, discover

EXCLUDED_DIRS = {
    "target",
    "node_modules",
    "dist",
    "build",
    ".git",
    ".run",
    "__pycache__",
    "static",
    ".bsp",
    ".idea",
    ".vscode",
}
EXCLUDED_NAMES = {
    "manifest.toml",
    ".gitignore",
    ".dockerignore",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
    "poetry.lock",
    "Gemfile.lock",
    "go.sum",
    "composer.lock",
}
# build files and configuration rather than program code: counted in `config`, not in `program`
CONFIG_LANGUAGES = {"Maven", "TOML", "JSON", "XML", "YAML", "INI", "Properties", "configuration", "Gradle", "Makefile"}
EXCLUDED_SUFFIXES = {".lock", ".jar", ".class", ".log", ".md"}


def _size(path: Path) -> int:
    if path.is_symlink():
        return path.lstat().st_size
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def artifact_bytes(server: Server) -> int | None:
    """Total bytes of the manifest's `artifacts` (files or folders, relative to the server's folder);
    None when the manifest lists none or one is missing (not built yet)."""
    if not server.artifacts:
        return None
    paths = [server.folder / a for a in server.artifacts]
    if any(not (p.exists() or p.is_symlink()) for p in paths):
        return None
    return sum(_size(p) for p in paths)


def _excluded(rel: Path) -> bool:
    if any(part in EXCLUDED_DIRS for part in rel.parts[:-1]):
        return True
    return rel.name in EXCLUDED_NAMES or rel.suffix in EXCLUDED_SUFFIXES


def _tracked(folder: Path) -> list[Path] | None:
    """Files git tracks under folder (relative to it), or None when git cannot tell."""
    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=folder, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode(errors="replace").split("\0") if n]
    return [Path(n) for n in names] or None


def _walk(folder: Path, start: Path) -> list[Path]:
    if start.is_file():
        return [start.relative_to(folder)]
    out: list[Path] = []
    for root, dirs, files in os.walk(start):
        dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS]
        out.extend(Path(root, f).relative_to(folder) for f in files)
    return out


def _shares_folder(server: Server, servers: dict[str, Server]) -> bool:
    return sum(1 for s in servers.values() if s.folder.resolve() == server.folder.resolve()) > 1


def source_files(server: Server, servers: dict[str, Server] | None = None) -> list[Path]:
    """The files counted as the server's implementation, relative to its folder, sorted."""
    servers = servers if servers is not None else discover()
    folder = server.folder
    if _shares_folder(server, servers):
        named = list(server.artifacts) + [a for a in server.run if (folder / a).exists()]
        files: set[Path] = set()
        for name in named:
            path = folder / name
            if path.exists() and path.resolve().is_relative_to(folder.resolve()):
                files.update(_walk(folder, path))
    else:
        files = set(_tracked(folder) or _walk(folder, folder))
    return sorted(f for f in files if not _excluded(f) and (folder / f).is_file())


def _plain_config_lines(path: Path) -> int:
    count = 0
    for line in path.read_text(errors="replace").splitlines():
        text = line.strip()
        if text and not text.startswith(("#", "//")):
            count += 1
    return count


@lru_cache(maxsize=1)
def pygount_version() -> str | None:
    try:
        return version("pygount")
    except Exception:
        return None


def lines_of_code(server: Server, servers: dict[str, Server] | None = None) -> dict[str, Any] | None:
    """{"code", "program", "config", "comments", "files", "languages": {language: code lines}, "tool"} of the server's
    implementation (`program`: lines in programming languages; `config`: build files and configuration);
    None when pygount is not installed."""
    try:
        from pygount import SourceAnalysis
        from pygount.analysis import SourceState
    except ImportError:
        return None
    code = comments = counted = 0
    languages: dict[str, int] = {}
    for rel in source_files(server, servers):
        path = server.folder / rel
        analysis = SourceAnalysis.from_file(str(path), server.name, fallback_encoding="utf-8")
        if analysis.state == SourceState.analyzed:
            # pygments sometimes names a mix ("JavaScript+Genshi Text"): keep the host language
            language, lines = analysis.language.split("+")[0], analysis.code_count + analysis.string_count
            comments += analysis.documentation_count
        elif analysis.state == SourceState.unknown and rel.suffix in (".conf", ".template", ".properties"):
            language, lines = "configuration", _plain_config_lines(path)
        else:  # binary, empty, generated, duplicate, or text pygount cannot place: not implementation
            continue
        counted += 1
        code += lines
        languages[language] = languages.get(language, 0) + lines
    program = sum(n for language, n in languages.items() if language not in CONFIG_LANGUAGES)
    return {
        "code": code,
        "program": program,
        "config": code - program,
        "comments": comments,
        "files": counted,
        "languages": dict(sorted(languages.items(), key=lambda kv: -kv[1])),
        "tool": f"pygount {pygount_version()}",
    }


def describe(server: Server, servers: dict[str, Server] | None = None) -> dict[str, Any]:
    """{"artifact_bytes": ..., "loc": ...}: what the campaign stores once per server and run."""
    return {"artifact_bytes": artifact_bytes(server), "loc": lines_of_code(server, servers)}

"""What changed between two runs' commits, from git: the commits that changed a server's inputs (its folder, the
shared modules it builds against, its lock files: a `Scope`), not counting notes, docs, tests or a change of comments
alone. Every revision given to git was read from a results.json: only a hex commit (harness.history.points.is_commit)
reaches it, after --end-of-options; git missing or failing is a problem named, never an exception."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness.history.points import is_commit

NOTE_SUFFIXES = (".md", ".txt", ".rst", ".png", ".svg", ".jpg", ".jpeg", ".gif")
BUILD_TEXT_FILES = ("requirements", "CMakeLists")  # .txt files a build reads: code
TEST_FOLDERS = {"test", "tests", "__tests__", "spec", "testdata"}
TEST_NAMES = ("test_", "Test.", "Tests.", "Spec.", "_test.", ".test.", ".spec.")
SLASH_COMMENTS = ("//", "/*", "*", "*/")
HASH_COMMENTS = ("#",)
COMMENTS = {
    **dict.fromkeys(
        (".js", ".mjs", ".cjs", ".ts", ".java", ".scala", ".rs", ".c", ".h", ".cc", ".cpp"), SLASH_COMMENTS
    ),
    **dict.fromkeys((".go", ".kt", ".sbt", ".gradle", ".css"), SLASH_COMMENTS),
    **dict.fromkeys((".py", ".sh", ".toml", ".yaml", ".yml", ".conf", ".properties", ".cfg", ".ini"), HASH_COMMENTS),
    **dict.fromkeys(("Makefile", "Dockerfile"), HASH_COMMENTS),
}
GIT_TIMEOUT_S = 60


def is_code_path(path: str) -> bool:
    """Whether a path changed in a server's inputs (as git prints it) changes what is built and run: anything but its
    notes and tests. Notes are Markdown and text (PROFILE.md, README.md, DIFF notes), reStructuredText, images (PNG,
    SVG, JPEG, GIF) and whatever lies under a docs/ folder; a .txt a build reads (requirements*.txt,
    CMakeLists.txt) is code. Tests: under a test(s)/spec folder, or named test_*, *Test.*, *Spec.*, *_test.*,
    *.test.*, *.spec.*."""
    name = PurePosixPath(path)
    if name.suffix == ".txt" and name.name.startswith(BUILD_TEXT_FILES):
        return True
    if TEST_FOLDERS & set(name.parts[:-1]) or any(mark in name.name for mark in TEST_NAMES):
        return False
    return "docs" not in name.parts[:-1] and name.suffix.lower() not in NOTE_SUFFIXES


def comment_only(path: str, lines: list[str]) -> bool:
    """Whether the lines a diff added and removed in `path` are all blank or comments of its language (a language
    without line comments known here: never)."""
    name = PurePosixPath(path)
    marks = COMMENTS.get(name.suffix.lower()) or COMMENTS.get(name.name)
    if not marks:
        return False
    return all(not line.strip() or line.strip().startswith(marks) for line in lines)


@dataclass(frozen=True)
class Scope:
    """What a server is built from: paths in `repo` (folders or files), less those of another server that shares its
    folder (node's node-server.js is not express's)."""

    repo: Path
    paths: tuple[str, ...] = (".",)
    excluded: tuple[str, ...] = ()

    def pathspecs(self) -> list[str]:
        return [*self.paths, *(f":(exclude){e}" for e in self.excluded)]


@dataclass(frozen=True)
class Touched:
    """The commits between two runs that changed a scope's code (`git log --oneline` lines), or why none is known."""

    code: list[str]
    problem: str = ""
    others: list[str] = field(default_factory=list)  # commits that changed only notes, tests or comments there


class Commits:
    """Per pair of commits and scope, the commits between them that changed code there, each asked of git once."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str, Scope], Touched] = {}

    def touching_code(self, a: str, b: str, scope: Scope | Path) -> Touched:
        """`git log A..B -- <scope>` with the paths each commit changed there: the commits with a code path among
        them (`is_code_path`) whose diff there is more than comments (`comment_only`)."""
        scope = scope if isinstance(scope, Scope) else Scope(scope)
        if "?" in (a, b):
            return Touched([], "a run's commit is not recorded")
        if not (is_commit(a) and is_commit(b)):  # read from files: only a commit reaches git, never an option
            return Touched([], "a run's commit is not a hex commit")
        key = (a, b, scope)
        if a != b and key not in self.known:
            self.known[key] = self._ask(a, b, scope)
        return self.known.get(key, Touched([]))

    def _ask(self, a: str, b: str, scope: Scope) -> Touched:
        log = _git(scope.repo, ["log", "--format=%x1e%H %h %s", "--name-only", "--end-of-options", f"{a}..{b}"], scope)
        if isinstance(log, Touched):
            return log
        code, others = [], []
        for chunk in log.split("\x1e")[1:]:
            head, *paths = chunk.strip("\n").splitlines()
            full, line = head.split(" ", 1)
            candidates = [p for p in paths if p and is_code_path(p)]
            if candidates and not self._comments_only(scope.repo, full, candidates):
                code.append(line)
            else:
                others.append(line)
        return Touched(code, others=others)

    def _comments_only(self, repo: Path, commit: str, paths: list[str]) -> bool:
        """Whether `commit` changed only comments and blank lines in `paths` (a failed git: no)."""
        only = Scope(repo, tuple(f":(top){p}" for p in paths))  # git prints paths from the top of the repository
        diff = _git(repo, ["show", "--format=", "-U0", "--no-color", "--no-ext-diff", "--end-of-options", commit], only)
        if isinstance(diff, Touched):
            return False
        changed: dict[str, list[str]] = {}
        current = ""
        for line in diff.splitlines():
            if line.startswith("+++ ") or line.startswith("--- "):
                current = line[6:] if line[4:6] in ("a/", "b/") else current
            elif line.startswith(("+", "-")) and current:
                changed.setdefault(current, []).append(line[1:])
            elif line.startswith("Binary files"):
                return False
        return all(comment_only(p, changed.get(p, [])) for p in paths if p in changed) and any(
            p in changed for p in paths
        )


def _git(repo: Path, args: list[str], scope: Scope) -> str | Touched:
    """git's output in `repo`, or a Touched naming why there is none (not installed, failed, too slow)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args, "--", *scope.pathspecs()],
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Touched([], f"git {args[0]} could not run: {exc}")
    if proc.returncode != 0:
        return Touched([], f"git {args[0]} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return proc.stdout

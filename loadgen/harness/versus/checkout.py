"""A server's folder as it was at a git revision, checked out into a worktree of its own and built there with its
manifest's build command (`make versus`); the worktree removed afterwards, also on failure and Ctrl-C, and one a killed
command left removed by the next `make versus`.

The worktree holds the whole repository at that revision (a Maven module is built by the reactor at its top, as
`make build` does), under .run/versus/, outside the repository's tracked files. A build runs in a process group of its
own, so that Ctrl-C stops Maven's JVM, cargo's rustc and npm's children with it, not only the shell."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.basics import interrupt
from harness.basics.messages import say
from harness.basics.paths import STATE_DIR
from harness.config.manifest import ManifestError, Server, build_steps, discover

WORKTREES = STATE_DIR / "versus"
GIT_TIMEOUT_S = 120  # one git command: a worktree's checkout is the slowest
FULL_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # what `git rev-parse --verify` prints for one commit (SHA-1/256)
BUILD_STOP_GRACE_S = 5
LOG_LINES = 15


class RevisionError(Exception):
    """A revision that does not exist, or a server that does not exist at it: bad input (exit status 2)."""


class BuildFailed(Exception):
    """A build that failed (exit status 1)."""


class GitFailed(Exception):
    """git that cannot run here or did not answer in time (exit status 1)."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise GitFailed(
            f"`git {' '.join(args)}` in {repo} did not answer within {GIT_TIMEOUT_S} s (another git holding its lock? "
            "a slow file system?): try again once `git status` there answers"
        ) from None
    except OSError as exc:
        raise GitFailed(f"git cannot run here ({exc.strerror or exc}): `make versus` needs git on the PATH") from None
    if check and proc.returncode != 0:
        raise RevisionError(f"`git {' '.join(args)}` failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


@dataclass(frozen=True)
class Revision:
    """What one side of the comparison is built from: a commit (`sha`), or the working tree as it is (`sha` None)."""

    asked: str  # as given: "HEAD~1", "main", "" for the working tree
    sha: str | None
    subject: str
    dirty: bool = False  # the working tree differs from its commit
    on: str | None = None  # the working tree's commit

    def same_as(self, other: Revision) -> bool:
        """Whether both build the same code: one commit, or the clean working tree and its commit."""
        mine = self.sha or (None if self.dirty else self.on)
        theirs = other.sha or (None if other.dirty else other.on)
        return mine is not None and mine == theirs

    @property
    def label(self) -> str:
        return self.sha[:7] if self.sha else "worktree"

    def to_dict(self) -> dict[str, object]:
        return {
            "asked": self.asked or "(the working tree)",
            "sha": self.sha,
            "label": self.label,
            "subject": self.subject,
            **({"uncommitted_changes": True} if self.dirty else {}),
        }


def repository_of(folder: Path) -> Path:
    """The top of the git repository holding `folder`."""
    try:
        return Path(git(folder, "rev-parse", "--show-toplevel"))
    except (RevisionError, OSError) as exc:
        raise RevisionError(f"{folder} is not in a git repository: `make versus` compares git revisions") from exc


def resolve(repo: Path, asked: str, what: str, folder: Path | None = None) -> Revision:
    """`asked` as a commit of `repo`; "" is the working tree, dirty when `folder` (or the repository) differs from its
    commit, untracked files that git does not ignore included (a new source file is a change). One that does not
    exist is a RevisionError."""
    if not asked:
        head = git(repo, "rev-parse", "HEAD", check=False)
        where = ["--", str(folder)] if folder else []
        dirty = bool(git(repo, "status", "--porcelain", "--untracked-files=normal", *where, check=False))
        return Revision("", None, f"the working tree (on {head[:7] or '?'})", dirty, head or None)
    if ".." in asked or asked.startswith("-") or not asked.isprintable() or any(c.isspace() for c in asked):
        raise RevisionError(
            f"{what}={asked!r}: give one git revision (a commit, branch or tag, e.g. {what}=HEAD~1), not a range or "
            "an option"
        )
    sha = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{asked}^{{commit}}", check=False)
    if not FULL_SHA.fullmatch(sha):  # nothing, or more than one line: not a single commit
        raise RevisionError(f"{what}={asked}: no such git revision in {repo} (`git log --oneline` lists them)")
    return Revision(asked, sha, git(repo, "log", "-1", "--format=%s", sha))


def clear_leftovers(repo: Path | None = None) -> None:
    """Worktrees a killed `make versus` left under .run/versus/, removed, and the repositories' entries for them
    unlocked and pruned (a SIGKILL during `git worktree add` leaves one locked, which neither --force nor prune
    clears); the command holds the harness's lock, so none of them is in use."""
    for path in sorted(WORKTREES.iterdir()) if WORKTREES.is_dir() else []:
        if path.is_dir():
            say(f"removing the worktree a killed `make versus` left: {path}")
            remove(path, repo)
    if repo is not None:  # an entry whose folder never came to be (killed before git made it)
        _release(repo, WORKTREES)


def remove(path: Path, repo: Path | None = None) -> None:
    """The worktree at `path` removed, and its repository's entry for it unlocked and pruned; never raises (a
    truncated or unreadable `.git` file is a worktree to delete all the same)."""
    try:
        repo = repo or _repository_of_worktree(path)
        shutil.rmtree(path, ignore_errors=True)
        if repo is not None and repo.is_dir():
            _release(repo, path)
    except (OSError, ValueError, subprocess.SubprocessError, GitFailed) as exc:
        say(f"could not remove the worktree {path} entirely ({exc}); `git worktree prune` in its repository does")


def _repository_of_worktree(path: Path) -> Path | None:
    """The repository a worktree's `.git` file names ("gitdir: <repo>/.git/worktrees/<name>"), or None."""
    marker = path / ".git"
    if not marker.is_file():
        return None
    text = marker.read_text(errors="replace")
    if ":" not in text:
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    return gitdir.parents[2] if gitdir.parent.name == "worktrees" and len(gitdir.parents) > 2 else None


def _release(repo: Path, under: Path) -> None:
    """Every entry of `repo`'s worktrees at or under `under` (all within .run/versus/) unlocked, then pruned: a lock
    elsewhere is the user's and stays."""
    entries = Path(git(repo, "rev-parse", "--git-common-dir", check=False) or repo / ".git")
    entries = (entries if entries.is_absolute() else repo / entries) / "worktrees"
    for entry in entries.iterdir() if entries.is_dir() else []:
        pointer = entry / "gitdir"
        target = pointer.read_text(errors="replace").strip() if pointer.is_file() else ""
        folder = Path(target).parent.resolve() if target else None
        lock = entry / "locked"
        ours = folder is not None and WORKTREES.resolve() in (folder, *folder.parents)
        half_made = not target and lock.is_file() and lock.read_text(errors="replace").startswith("initializing")
        if half_made or (ours and (under == WORKTREES or folder == under.resolve())):
            lock.unlink(missing_ok=True)
    git(repo, "worktree", "prune", check=False)


class Worktree:
    """`revision` of `repo` checked out under .run/versus/ while in use (a context manager); removed on exit."""

    def __init__(self, repo: Path, revision: Revision, name: str):
        self.repo, self.revision = repo, revision
        self.path = WORKTREES / f"{name}-{revision.label}"

    def __enter__(self) -> Worktree:
        WORKTREES.mkdir(parents=True, exist_ok=True)
        remove(self.path, self.repo)
        say(f"checking out {self.revision.label} ({self.revision.subject}) into {self.path}")
        try:
            git(self.repo, "worktree", "add", "--detach", "--force", str(self.path), self.revision.sha or "HEAD")
        except BaseException:
            remove(self.path, self.repo)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        remove(self.path, self.repo)


def server_at(folder_in_checkout: Path, name: str, revision: Revision, what: str) -> Server:
    """The server `name` as the manifests of the checked-out folder describe it."""
    try:
        servers = discover(folder_in_checkout)
    except ManifestError as exc:
        raise RevisionError(f"{what}={revision.asked}: its manifests cannot be read ({exc})") from None
    if name not in servers:
        raise RevisionError(
            f"{what}={revision.asked}: there is no server {name!r} at {revision.label} "
            f"(its servers: {', '.join(servers) or 'none'})"
        )
    return servers[name]


def build_log(name: str) -> Path:
    """A command's build log under WORKTREES, emptied: each build step of the command appends to it."""
    log = WORKTREES / f"{name}-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    return log


def build(server: Server, label: str, log: Path) -> None:
    """`server` built with its manifest's build command (a shared one, Maven's `{folders}`, for its folder alone),
    the output in `log`; BuildFailed with the end of it when a step fails."""
    for step in build_steps([replace(server, name=label)]):
        say(f"building {label}: {step.command}  (in {step.cwd})")
        with log.open("ab") as out:
            proc = None
            try:
                with interrupt.deferred():  # a Ctrl-C during the Popen raises once `proc` holds the build
                    proc = subprocess.Popen(
                        step.command,
                        shell=True,
                        cwd=step.cwd,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                code = proc.wait()
            except BaseException:  # Ctrl-C: the whole build's process group, not just its shell
                if proc is not None:
                    _stop_group(proc)
                raise
        if code != 0:  # the end of its output, then one line saying what failed
            say("\n".join(f"    {line}" for line in log.read_text(errors="replace").splitlines()[-LOG_LINES:]))
            raise BuildFailed(
                f"building {label} failed (exit {code}): `{step.command}` in {step.cwd}; the end of its "
                f"output is above, all of it in {log}"
            )


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the build's process group, then SIGKILL to whatever of it is left after a grace period (the shell
    may be gone while Maven's JVM or npm's children still run)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=BUILD_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        if sig == signal.SIGTERM:
            time.sleep(0.2)  # its children's own exit, before the group is killed outright
    if proc.poll() is None:
        proc.wait(timeout=BUILD_STOP_GRACE_S)

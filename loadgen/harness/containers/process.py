"""A load tool run with `docker exec` in the loadgen container, seen by the runner as the subprocess.Popen it expects:
on this machine's engine (ContainerProcess) or on the load generator's host (RemoteTool)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import tarfile
from pathlib import Path

import psutil

from harness.basics.machine import wait_until
from harness.containers.engine import run_cli
from harness.containers.engine_runtime import EngineRuntime
from harness.containers.images import LOADGEN
from harness.containers.service import container_name


class RelayedTool:
    """A load tool whose output a local `docker exec` client relays, seen by the runner as the subprocess.Popen it
    expects; subclasses say how a signal reaches the tool itself (a killed client would leave it running)."""

    def __init__(self, client: subprocess.Popen[bytes]):
        self.client = client
        self.args = client.args

    @property
    def returncode(self) -> int | None:
        return self.client.returncode

    def poll(self) -> int | None:
        return self.client.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.client.wait(timeout)

    def send_signal(self, sig: int) -> None:
        raise NotImplementedError

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        try:
            self.client.wait(5)
        except subprocess.TimeoutExpired:
            self.client.kill()


class ContainerProcess(RelayedTool):
    """A load tool running in the loadgen container, behaving like the subprocess.Popen the runner expects.

    `pid` is the tool's process as the host sees it (so the runner samples the tool, not the docker client);
    terminate/kill signal that process, not just the client (a killed `docker exec` leaves its process running)."""

    def __init__(self, client: subprocess.Popen[bytes], token: str, loadgen_pid: int):
        super().__init__(client)
        self.token, self.loadgen_pid = token, loadgen_pid
        self._tool_pid: int | None = None

    def _find(self) -> int | None:
        if self._tool_pid is None:
            try:  # exec'd processes are children of the container's shim, like its init
                shim = psutil.Process(self.loadgen_pid).parent()
                for child in shim.children() if shim else []:
                    try:
                        if child.environ().get("BENCH_TOOL") == self.token:
                            self._tool_pid = child.pid
                            break
                    except psutil.Error:
                        continue
            except psutil.Error:
                pass
        return self._tool_pid

    @property
    def pid(self) -> int:
        return self._find() or self.client.pid

    def send_signal(self, sig: int) -> None:
        if self.client.poll() is not None:
            return
        # the process may be a few milliseconds from existing when this comes right after the start
        wait_until(lambda: self._find() is not None or self.client.poll() is not None, 2)
        pid = self._find()
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except PermissionError:
                run_cli(
                    [
                        "docker",
                        "exec",
                        "-u",
                        "0",
                        container_name(LOADGEN),
                        "kill",
                        f"-{int(sig)}",
                        str(self._container_pid(pid)),
                    ],
                    timeout=30,
                    check=False,
                )
        else:
            self.client.send_signal(sig)

    @staticmethod
    def _container_pid(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
        return pid


class RemoteTool(RelayedTool):
    """A load tool in the loadgen container on the load generator's host, seen by the runner as a Popen: the local
    `docker exec` client relays its output; signals go to the tool through the engine (a killed client would leave
    the tool running there); its side files are copied back into its scratch folder when it has ended. `runtime`:
    the several-hosts runtime (its `docker` and the loadgen's `place`)."""

    def __init__(self, client: subprocess.Popen[bytes], runtime: EngineRuntime, token: str, scratch: Path):
        super().__init__(client)
        self.runtime, self.token, self.scratch = runtime, token, scratch
        self._fetched = False

    @property
    def pid(self) -> int:
        return self.client.pid

    def wait(self, timeout: float | None = None) -> int:
        code = self.client.wait(timeout)
        if not self._fetched:
            self._fetched = True
            self._fetch()
        return code

    def _in_loadgen(self, *argv: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
        return self.runtime.docker(
            self.runtime.place("loadgen"), "exec", container_name(LOADGEN), *argv, check=False, timeout=timeout
        )

    def _fetch(self) -> None:
        """The tool's side files (ab's percentiles...) into its scratch folder here (the folder in the container goes
        with the container at the end of the command). They are on the container's /tmp, a tmpfs that `docker cp`
        does not see: a tar of them through `docker exec`, regular files and folders only, inside the scratch folder."""
        proc = self._in_loadgen("tar", "-C", f"/tmp/out-{self.token}", "-cf", "-", ".", timeout=120)
        if proc.returncode != 0:
            return
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            members = [
                m
                for m in tar.getmembers()
                if (m.isfile() or m.isdir())
                and m.name not in (".", "./")
                and not m.name.startswith("/")
                and ".." not in Path(m.name).parts
            ]
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later: no link or device out of the folder
                tar.extractall(self.scratch, members=members, filter="data")
            else:
                tar.extractall(self.scratch, members=members)

    def send_signal(self, sig: int) -> None:
        if self.client.poll() is not None:
            return
        script = f"[ -s /tmp/pid-{self.token} ] && kill -{int(sig)} $(cat /tmp/pid-{self.token})"
        if self._in_loadgen("sh", "-c", script, timeout=30).returncode != 0:
            self.client.send_signal(sig)


def readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A repository file as copied into the loadgen container: root's, readable by all, writable by none else."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = (info.mode | 0o444) & 0o755
    return info

"""The images: a family runtime per kind of server (bench/<family>:bookworm, built by docker/base-images.sh), and each
server's image, that runtime plus exactly the artifacts of `make build`, rebuilt when those change (a digest of
them is the image's label `bench.inputs`)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

from harness.basics.messages import say
from harness.basics.paths import REPO
from harness.config.manifest import Server
from harness.containers.engine import image_labels, run_cli
from harness.runtime.protocol import RuntimeFailure

DOCKER_DIR = REPO / "docker"
SUITE = "bookworm"
LOADGEN = "loadgen"  # the load generator: its image family and its compose service
APP_ROOT = "/srv"  # a server's artifacts are copied to /srv/<its folder>, its working directory


def image_owner(server: Server) -> str:
    """The server whose image a server runs: its own, or, for an A/A twin, the image of the server it is a twin of
    (the same artifacts: one image, so the twins run the very same bytes)."""
    return server.twin_of or server.name


def family(server: Server) -> str:
    """The image family of a server: docker/<name>.Dockerfile where there is one (nginx), else from what it runs."""
    if (DOCKER_DIR / f"{image_owner(server)}.Dockerfile").exists():
        return image_owner(server)
    program = Path(server.run[0]).name
    if program == "java":
        return "jvm"
    if program == "node":
        return "node"
    return "native"


def runtime_image(fam: str) -> str:
    return f"bench/{fam}:{SUITE}"


def server_image(server: Server) -> str:
    return f"bench/server-{image_owner(server)}:latest"


def app_dir(server: Server) -> str:
    return f"{APP_ROOT}/{server.folder.name}"


def static_mounts(server: Server) -> list[str]:
    """Artifacts that are folders named `static` are bind-mounted (read-only), not copied: nginx serves its files from
    the host's filesystem (measured here: 0.88-0.95x native bind-mounted, 0.77x from the image's overlay filesystem)."""
    return [a for a in server.artifacts if Path(a).name == "static" and (server.folder / a).is_dir()]


def _artifact_paths(server: Server) -> list[Path]:
    missing = [a for a in server.artifacts if not (server.folder / a).exists()]
    if missing:
        raise RuntimeFailure(
            f"{server.name}: artifact(s) {', '.join(missing)} missing in {server.folder}: run `make build`"
        )
    if not server.artifacts:
        raise RuntimeFailure(
            f"{server.name}: its manifest lists no `artifacts`; the Docker runtime copies exactly those"
        )
    return [server.folder / a for a in server.artifacts]


def _walk(path: Path) -> Iterator[Path]:
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.iterdir()):
            yield from _walk(child)
    else:
        yield path


def inputs_digest(server: Server, runtime_id: str) -> str:
    """What a server image is made of: its artifacts (path, mode, content), its runtime image and the recipe."""
    h = hashlib.sha256()
    h.update((DOCKER_DIR / "server.Dockerfile").read_bytes())
    h.update(f"{runtime_id} {app_dir(server)}\n".encode())
    for top in _artifact_paths(server):
        for path in _walk(top):
            st = path.lstat()
            h.update(f"{path.relative_to(server.folder)} {st.st_mode:o}\n".encode())
            if path.is_symlink():
                h.update(os.readlink(path).encode())
            else:
                with path.open("rb") as f:
                    h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:24]


def _current(fam: str) -> bool:
    """Whether bench/<family>:bookworm exists and was built from its Dockerfile as it is now (the `bench.recipe` label
    base-images.sh writes: the Dockerfile's sha256, 16 hex digits), so a changed recipe (a JRE added to loadgen) is
    rebuilt rather than run stale."""
    labels = image_labels(runtime_image(fam))
    if labels is None:
        return False
    dockerfile = DOCKER_DIR / f"{fam}.Dockerfile"
    recipe = labels.get("bench.recipe")
    return (
        recipe is None or not dockerfile.exists() or recipe == hashlib.sha256(dockerfile.read_bytes()).hexdigest()[:16]
    )


def ensure_runtime_images(families: set[str]) -> None:
    """bench/<family>:bookworm for each family, built by docker/base-images.sh where missing (it builds bench/base
    from Debian with debootstrap when no base image is present, or OFFLINE=1)."""
    missing = sorted(f for f in families if not _current(f))
    if not missing:
        return
    say(
        f"building the runtime image(s) {', '.join(runtime_image(f) for f in missing)} (docker/base-images.sh: new, or "
        "their Dockerfile changed)"
    )
    proc = subprocess.run([str(DOCKER_DIR / "base-images.sh")], env={**os.environ, "FAMILIES": " ".join(missing)})
    if proc.returncode != 0:
        raise RuntimeFailure("building the base images failed (output above); see docker/base-images.sh")


def ensure_server_image(server: Server, force: bool = False) -> bool:
    """Builds the server's image when it is missing or out of date with its artifacts; True when it built one."""
    fam = family(server)
    ensure_runtime_images({fam})
    runtime = image_labels(runtime_image(fam))
    if runtime is None:
        raise RuntimeFailure(f"the image {runtime_image(fam)} is not on this engine after its build")
    digest = inputs_digest(server, runtime["id"])
    image = server_image(server)
    current = image_labels(image)
    if current and current.get("bench.inputs") == digest and not force:
        return False
    started = time.monotonic()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.add(DOCKER_DIR / "server.Dockerfile", arcname="Dockerfile")
        for artifact, path in zip(server.artifacts, _artifact_paths(server)):
            if artifact in static_mounts(server):  # bind-mounted at run time: an empty folder as the mount point
                info = tarfile.TarInfo(f"app/{artifact}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            tar.add(path, arcname=f"app/{artifact}")
    argv = [
        "docker",
        "build",
        "--force-rm",
        "--network",
        "none",
        "-t",
        image,
        "--build-arg",
        f"RUNTIME_IMAGE={runtime_image(fam)}",
        "--build-arg",
        f"APP_DIR={app_dir(server)}",
        "--label",
        f"bench.server={image_owner(server)}",
        "--label",
        f"bench.inputs={digest}",
        "--label",
        f"bench.runtime={runtime_image(fam)}",
        "-",
    ]
    run_cli(argv, timeout=900, input=context.getvalue())
    if current and current["id"] != (image_labels(image) or {}).get("id"):
        run_cli(["docker", "rmi", current["id"]], check=False)  # the previous build, now untagged
    say(
        f"  image {image} built in {time.monotonic() - started:.1f} s ({image_size(image)}: "
        f"{runtime_image(fam)} + {len(context.getvalue()) / 1e6:.1f} MB of artifacts)"
    )
    return True


def image_size(image: str) -> str:
    proc = run_cli(["docker", "image", "inspect", "--format", "{{.Size}}", image], check=False)
    return f"{int(proc.stdout.strip()) / 1e6:.0f} MB" if proc.returncode == 0 else "?"


def build_images(servers: list[Server], force: bool = False) -> None:
    ensure_runtime_images({family(s) for s in servers} | {LOADGEN})
    for server in servers:
        if not ensure_server_image(server, force):
            say(f"  image {server_image(server)} is up to date with {server.folder.name}/'s artifacts")


def version_in_image(server: Server) -> str:
    """The server's `version` command run in its image (the runtime's node/nginx/java), with its source folder
    mounted read-only where its image has the artifacts (pom.xml, Cargo.lock are read from there)."""
    if not server.version:
        return "unknown"
    proc = run_cli(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{server.folder}:{app_dir(server)}:ro",
            "-w",
            app_dir(server),
            "--entrypoint",
            "bash",
            server_image(server),
            "-c",
            server.version,
        ],
        check=False,
        timeout=60,
    )
    return " ".join((proc.stdout + proc.stderr).decode(errors="replace").split()) or "unknown"

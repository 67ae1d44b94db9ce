"""Images from this machine's engine to a host's (`docker save | docker load`: no registry is needed)."""

from __future__ import annotations

import subprocess

from harness.config.host_roles import Host, HostsError, docker_args
from harness.containers.engine import image_labels, piped

SEND_TIMEOUT_S = 1800  # an image sent with docker save | docker load: a JVM server's is ~400 MB


def image_id(image: str, h: Host | None) -> str | None:
    """The image's id on that host's engine (None: the local engine), or None when it has no such image."""
    labels = image_labels(image, docker_args(h) if h else ())
    return labels["id"] if labels else None


def send_image(image: str, h: Host) -> bool:
    """The local engine's `image` onto the host's engine when the host lacks it or holds another build (`docker save |
    docker load`: no registry); True when it was sent."""
    local = image_id(image, None)
    if not local:
        raise HostsError(f"no image {image} here to send to {h.role} ({h.endpoint}): make docker-images")
    if image_id(image, h) == local:
        return False
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        load = subprocess.run(
            ["docker", *docker_args(h), "load", "--quiet"],
            stdin=save.stdout,
            capture_output=True,
            text=True,
            timeout=SEND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        save.kill()
        save.wait()
        raise HostsError(
            f"sending {image} to {h.role} ({h.endpoint}) took longer than {SEND_TIMEOUT_S} s: is the "
            "connection to that host alive?"
        ) from None
    piped(save.stdout, "docker save").close()
    save_err = piped(save.stderr, "docker save").read().decode(errors="replace").strip()
    if save.wait() != 0 or load.returncode != 0:
        why = (save_err or load.stderr.strip() or "no message").splitlines()[-1]
        raise HostsError(f"sending {image} to {h.role} ({h.endpoint}) failed: {why}")
    if image_id(image, h) != local:
        raise HostsError(f"{h.role} ({h.endpoint}) loaded {image} but holds another id than this machine's")
    return True

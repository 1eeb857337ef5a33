"""The queues and which job goes where: image, video and style pools scale independently."""

from __future__ import annotations

QUEUES = ("image", "video", "style")
RUN_JOB_TASK = "sfumato.run_job"


def broker_queue(namespace: str, queue: str) -> str:
    """The broker's name of a queue: namespaced, so deployments sharing a Redis (or services
    sharing one process's in-memory broker, as tests do) never take each other's tasks."""
    return f"{namespace}.{queue}"


QUEUE_OF_OPERATION = {
    "generate": "image",
    "edit": "image",
    "reframe": "image",
    "upscale": "image",
    "animate": "video",
    "transition": "video",
    "extract_style": "style",
}

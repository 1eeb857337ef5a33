"""The queues and which job goes where: image, video and style pools scale independently."""

from __future__ import annotations

QUEUES = ("image", "video", "style")
RUN_JOB_TASK = "sfumato.run_job"

QUEUE_OF_OPERATION = {
    "generate": "image",
    "edit": "image",
    "reframe": "image",
    "upscale": "image",
    "animate": "video",
    "transition": "video",
    "extract_style": "style",
}

"""What a job is, as every layer names it: its queues, and which operation runs on which."""

from __future__ import annotations

QUEUES = ("image", "video", "style")

# The image, video and style pools scale independently.
QUEUE_OF_OPERATION = {
    "generate": "image",
    "edit": "image",
    "reframe": "image",
    "upscale": "image",
    "animate": "video",
    "transition": "video",
    "extract_style": "style",
}

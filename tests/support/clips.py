"""A stored MP4 decoded with PyAV: its codec, size, frames (RGB arrays), rate, duration and
audio streams, for the video tests to check what a client would play."""

from __future__ import annotations

import tempfile
from pathlib import Path

import av
import httpx


def decoded(url: str) -> dict:
    response = httpx.get(url)
    assert response.status_code == 200
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        path.write_bytes(response.content)
        return decode_file(str(path))


def decode_file(path: str) -> dict:
    with av.open(path) as container:
        video, audio = container.streams.video[0], container.streams.audio
        audio_streams = [(a.codec_context.name, a.codec_context.sample_rate) for a in audio]
        pixels = [frame.to_ndarray(format="rgb24") for frame in container.decode(video)]
        duration = float(container.duration) / av.time_base if container.duration else 0.0
        return {
            "codec": video.codec_context.name,
            "size": (video.codec_context.width, video.codec_context.height),
            "frames": pixels,
            "fps": float(video.average_rate),
            "duration": duration,
            "audio": audio_streams,
        }

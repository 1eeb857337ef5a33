"""The Python client against the real service (tests/conftest.py's `service`: a real uvicorn
server with its workers, embedded and, where configured, distributed)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import av
import pytest
from PIL import Image

from sfumato_client import Client
from tests.support.service import Service


@pytest.fixture
def client(service: Service, key: str) -> Iterator[Client]:
    with Client(service.api, key) as opened:
        yield opened


def png_size(path: Path) -> tuple[int, int]:
    """The size of a real PNG file (decoded in full, so a broken file fails)."""
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return image.size


def mp4_facts(path: Path) -> tuple[int, int, int, bool]:
    """(width, height, decoded frames, has audio) of a real MP4 (ftyp first, frames decoded)."""
    assert path.read_bytes()[4:8] == b"ftyp", f"{path} is not an MP4"
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        has_audio = bool(container.streams.audio)
        frames = sum(1 for _ in container.decode(video=0))
        return video.codec_context.width, video.codec_context.height, frames, has_audio

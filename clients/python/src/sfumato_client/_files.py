"""Local files: which inputs name one, what an upload sends, where downloads go."""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from urllib.parse import urlparse

from sfumato_client.models import JobData, PresignRequest

FileInput = str | os.PathLike[str]
UploadSource = FileInput | bytes


def local_file(value: FileInput) -> Path | None:
    """The local file an image input names, or None for an id or a URL (sent as it is).

    A `Path` is always a file; a string is one when it names an existing file."""
    if isinstance(value, os.PathLike):
        return Path(value)
    if "://" in value:
        return None
    path = Path(value).expanduser()
    return path if path.is_file() else None


def upload_payload(
    source: UploadSource, filename: str | None, content_type: str | None
) -> tuple[bytes, PresignRequest]:
    """The bytes of an upload (a path or the bytes themselves) and the presign request that
    announces them: the file's name unless `filename` is given, the type read from the bytes
    unless `content_type` is."""
    if isinstance(source, bytes):
        data, name = source, filename or "upload"
    else:
        path = Path(source).expanduser()
        data, name = path.read_bytes(), filename or path.name
    return data, PresignRequest(
        filename=name, content_type=content_type or image_content_type(data, name)
    )


def image_content_type(data: bytes, filename: str) -> str:
    """The type an upload declares: from the bytes' signature, else from the file name (the
    server checks the real bytes either way)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return mimetypes.guess_type(filename)[0] or "application/octet-stream"


def job_media(job: JobData) -> list[tuple[str, str]]:
    """The (url, file name) of each output of a completed job: its images or its video."""
    result = job.result
    if job.status != "completed" or result is None:
        raise ValueError(f"job {job.id} is {job.status}: only a completed job has media")
    if result.images:
        return [(image.url, _name(image.id, image.url, ".png")) for image in result.images]
    if result.video is not None:
        return [(result.video.url, _name(result.video.id, result.video.url, ".mp4"))]
    raise ValueError(f"job {job.id} ({job.type}) has no images or video to download")


def _name(media_id: str, url: str, default_suffix: str) -> str:
    return media_id + (Path(urlparse(url).path).suffix or default_suffix)


def download_paths(target: FileInput, names: list[str]) -> list[Path]:
    """Where each output goes: into `target` when it is a directory (an existing one, one
    ending in a separator, or a name without a suffix), else `target` itself for one output
    and `stem-1.ext`, `stem-2.ext`, ... for several."""
    path = Path(target).expanduser()
    as_text = os.fspath(target)
    if path.is_dir() or as_text.endswith(("/", os.sep)) or not path.suffix:
        return [path / name for name in names]
    if len(names) == 1:
        return [path]
    return [
        path.with_name(f"{path.stem}-{index}{path.suffix}") for index in range(1, len(names) + 1)
    ]

"""Uploads: presign, PUT the bytes to storage, complete, in one call; local inputs resolved."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sfumato_client._files import FileInput, image_content_type, local_file
from sfumato_client._transport import AsyncTransport, SyncTransport
from sfumato_client.models import PresignedUpload, PresignRequest, Upload

UploadSource = FileInput | bytes


def _read(source: UploadSource, filename: str | None) -> tuple[bytes, str]:
    if isinstance(source, bytes):
        return source, filename or "upload"
    path = Path(source).expanduser()
    return path.read_bytes(), filename or path.name


def _presign_body(data: bytes, name: str, content_type: str | None) -> PresignRequest:
    return PresignRequest(
        filename=name, content_type=content_type or image_content_type(data, name)
    )


class Uploads:
    def __init__(self, transport: SyncTransport) -> None:
        self._transport = transport

    def upload(
        self,
        path_or_bytes: UploadSource,
        content_type: str | None = None,
        *,
        filename: str | None = None,
    ) -> Upload:
        """Uploads an image (a path or its bytes) and returns the completed upload; its `id`
        is a reference for generations. The type is read from the bytes unless given."""
        data, name = _read(path_or_bytes, filename)
        body = _presign_body(data, name, content_type)
        presigned = PresignedUpload.model_validate(
            self._transport.request("POST", "/uploads", json=body.wire())["data"]
        )
        # Storage's signed URL carries its own authorisation: no API key goes with the bytes.
        self._transport.send(
            "PUT",
            presigned.upload_url,
            headers={"Content-Type": body.content_type},
            content=data,
        )
        completed = self._transport.request("POST", f"/uploads/{presigned.upload_id}/complete")
        return Upload.model_validate(completed["data"])

    def resolve(self, image: FileInput) -> str:
        """An image input as the API takes it: a local file is uploaded first (its id is
        sent); an id or a URL is sent as it is."""
        path = local_file(image)
        return self.upload(path).id if path is not None else str(image)

    def resolve_all(self, images: Sequence[FileInput] | None) -> list[str] | None:
        return None if images is None else [self.resolve(image) for image in images]


class AsyncUploads:
    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport

    async def upload(
        self,
        path_or_bytes: UploadSource,
        content_type: str | None = None,
        *,
        filename: str | None = None,
    ) -> Upload:
        data, name = _read(path_or_bytes, filename)
        body = _presign_body(data, name, content_type)
        presigned = PresignedUpload.model_validate(
            (await self._transport.request("POST", "/uploads", json=body.wire()))["data"]
        )
        await self._transport.send(
            "PUT",
            presigned.upload_url,
            headers={"Content-Type": body.content_type},
            content=data,
        )
        completed = await self._transport.request(
            "POST", f"/uploads/{presigned.upload_id}/complete"
        )
        return Upload.model_validate(completed["data"])

    async def resolve(self, image: FileInput) -> str:
        path = local_file(image)
        return (await self.upload(path)).id if path is not None else str(image)

    async def resolve_all(self, images: Sequence[FileInput] | None) -> list[str] | None:
        return None if images is None else [await self.resolve(image) for image in images]

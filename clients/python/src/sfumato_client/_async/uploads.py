"""Uploads: presign, PUT the bytes to storage, complete, in one call; local inputs resolved."""

from __future__ import annotations

from collections.abc import Sequence

from sfumato_client._async.transport import AsyncTransport
from sfumato_client._files import FileInput, UploadSource, local_file, upload_payload
from sfumato_client.models import PresignedUpload, Upload


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
        """Uploads an image (a path or its bytes) and returns the completed upload; its `id`
        is a reference for generations. The type is read from the bytes unless given."""
        data, body = upload_payload(path_or_bytes, filename, content_type)
        answer = await self._transport.request("POST", "/uploads", json=body.wire())
        presigned = PresignedUpload.model_validate(answer["data"])
        # Storage's signed URL carries its own authorisation: no API key goes with the bytes.
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
        """An image input as the API takes it: a local file is uploaded first (its id is
        sent); an id or a URL is sent as it is."""
        path = local_file(image)
        if path is None:
            return str(image)
        upload = await self.upload(path)
        return upload.id

    async def resolve_all(self, images: Sequence[FileInput] | None) -> list[str] | None:
        return None if images is None else [await self.resolve(image) for image in images]

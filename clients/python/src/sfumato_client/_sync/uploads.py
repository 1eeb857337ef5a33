# Generated from sfumato_client/_async/uploads.py by clients/python/generate_sync.py
# (`make client-sync`): change that file, not this one.
"""Uploads: presign, PUT the bytes to storage, complete, in one call; local inputs resolved."""

from __future__ import annotations

from collections.abc import Sequence

from sfumato_client._files import FileInput, UploadSource, local_file, upload_payload
from sfumato_client._sync.transport import Transport
from sfumato_client.models import PresignedUpload, Upload


class Uploads:
    def __init__(self, transport: Transport) -> None:
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
        data, body = upload_payload(path_or_bytes, filename, content_type)
        answer = self._transport.request("POST", "/uploads", json=body.wire())
        presigned = PresignedUpload.model_validate(answer["data"])
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
        if path is None:
            return str(image)
        upload = self.upload(path)
        return upload.id

    def resolve_all(self, images: Sequence[FileInput] | None) -> list[str] | None:
        return None if images is None else [self.resolve(image) for image in images]

"""An S3-compatible bucket (AWS S3, MinIO, Ceph, R2, ...) through boto3 presigned URLs.

Credentials come from boto3's usual chain (environment, shared config, instance or pod role).
With an explicit endpoint the bucket is addressed by path (`endpoint/bucket/key`), which every
S3-compatible server understands; without one, AWS's own addressing is used. A public endpoint,
when given, is the address clients reach the same server at (a container's name is not known on
the host): presigned URLs are written for it, while the service's own calls use the endpoint.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core.storage.base import Storage, StorageError

MISSING_OBJECT_CODES = {"404", "NoSuchKey", "NotFound"}
MAX_PRESIGNED_SECONDS = 7 * 24 * 3600
# A URL signed with a temporary session's token dies with the token, and botocore renews a token
# 10 minutes before it expires at the latest: such URLs are reused for 5-minute spans only.
TEMPORARY_REUSE_SECONDS = 300


class S3Storage(Storage):
    def __init__(
        self,
        bucket: str,
        endpoint_url: str | None,
        region: str | None,
        public_endpoint_url: str | None = None,
    ) -> None:
        super().__init__()
        self.bucket = bucket
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path" if endpoint_url else "auto"},
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            max_pool_connections=32,
        )
        session = boto3.session.Session()
        self._credentials: Any = session.get_credentials()
        self._client: Any = session.client(
            "s3", endpoint_url=endpoint_url, region_name=region, config=config
        )
        # Presigning is local (no request): a second client only to write the public address.
        self._signer: Any = (
            session.client(
                "s3", endpoint_url=public_endpoint_url, region_name=region, config=config
            )
            if public_endpoint_url
            else self._client
        )

    def _call(self, action: str, key: str, **params: Any) -> Any:
        try:
            return getattr(self._client, action)(Bucket=self.bucket, Key=key, **params)
        except (BotoCoreError, ClientError) as error:
            raise StorageError(f"S3 {action} of {key} failed: {error}") from error

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        self._call("put_object", key, Body=data, ContentType=content_type)

    def get_bytes(self, key: str) -> bytes:
        body = self._call("get_object", key)["Body"]
        try:
            return bytes(body.read())
        except (BotoCoreError, OSError) as error:
            raise StorageError(f"S3 read of {key} failed: {error}") from error
        finally:
            body.close()

    def size_of(self, key: str) -> int | None:
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code")) in MISSING_OBJECT_CODES:
                return None
            raise StorageError(f"S3 head_object of {key} failed: {error}") from error
        except BotoCoreError as error:
            raise StorageError(f"S3 head_object of {key} failed: {error}") from error
        return int(head["ContentLength"])

    def delete(self, key: str) -> None:
        self._call("delete_object", key)

    def keys_under(self, prefix: str) -> list[str]:
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            return [item["Key"] for page in pages for item in page.get("Contents", [])]
        except (BotoCoreError, ClientError) as error:
            raise StorageError(f"S3 listing of {prefix} failed: {error}") from error

    def _presign(self, action: str, key: str, expires_in: int, **params: Any) -> str:
        try:
            return str(
                self._signer.generate_presigned_url(
                    action,
                    Params={"Bucket": self.bucket, "Key": key, **params},
                    ExpiresIn=expires_in,
                )
            )
        except BotoCoreError as error:
            raise StorageError(f"cannot presign {action} of {key}: {error}") from error

    def _signing_identity(self) -> object:
        if self._credentials is None:
            return None
        frozen = self._credentials.get_frozen_credentials()
        if frozen.token is None:
            return frozen.access_key
        return (frozen.access_key, frozen.token, int(self.clock()) // TEMPORARY_REUSE_SECONDS)

    def _signed_url(self, key: str, base_url: str, expires: int) -> str:
        # SigV4 refuses a presigned URL valid for longer than a week.
        return self._presign(
            "get_object", key, min(expires - int(self.clock()), MAX_PRESIGNED_SECONDS)
        )

    def upload_url_for(
        self, key: str, *, content_type: str, max_bytes: int, base_url: str, expires_in: int
    ) -> str:
        # The content type is a signed header: S3 refuses a PUT that sends another one. A
        # presigned PUT cannot bound the body's size, so completing the upload checks it.
        return self._presign("put_object", key, expires_in, ContentType=content_type)

    @functools.cached_property
    def _object_url_prefix(self) -> tuple[str, str, str]:
        """(scheme, host, path prefix) of this bucket's object URLs, as boto3 writes them."""
        marker = "sfumato-key-marker"
        parts = urlsplit(self._presign("get_object", marker, 60))
        return parts.scheme, parts.netloc.lower(), parts.path.removesuffix(marker)

    def key_from_url(self, url: str) -> str | None:
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        scheme, host, prefix = self._object_url_prefix
        if (parts.scheme, parts.netloc.lower()) != (scheme, host):
            return None
        if not parts.path.startswith(prefix) or parts.path == prefix:
            return None
        return unquote(parts.path[len(prefix) :])

"""A real S3-protocol server for tests: moto's standalone server on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from moto.server import ThreadedMotoServer

BUCKET = "sfumato-test-media"
# boto3 signs with whatever credentials it finds; moto accepts any. IMDS is off so a missing
# variable can never send boto3 looking for instance credentials.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "sfumato-test",
    "AWS_SECRET_ACCESS_KEY": "sfumato-test-secret",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@contextmanager
def s3_server() -> Iterator[str]:
    """Start the server, create the bucket, yield `SFUMATO_STORAGE_URL` for it."""
    with moto_server() as (storage_url, _server):
        yield storage_url


@contextmanager
def moto_server() -> Iterator[tuple[str, ThreadedMotoServer]]:
    """`s3_server`, with the server itself, for tests that stop it."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=BUCKET
        )
        try:
            yield f"s3://{BUCKET}?endpoint={endpoint}", server
        finally:
            server.stop()

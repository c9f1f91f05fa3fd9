"""Where ``storage.shared_url`` points, and how the code reaches it.

A shared location is a local folder (an NFS or other mounted disk, ``file://``) or an S3 prefix
(``s3://bucket/prefix``) on AWS or any S3-compatible server. Every read and write of it (the
published builds, the workers' exchange) goes through pyarrow's file systems; its
``S3FileSystem`` takes ``endpoint_override`` (with the scheme, e.g. ``http://127.0.0.1:9000``),
``access_key``, ``secret_key``, ``session_token`` and ``region``, and reads no environment by
itself when a key is given, so every value is passed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import ObjectStoreSettings, Settings

CONNECT_TIMEOUT_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 60.0
ENV_KEYS = {
    "endpoint_url": "AWS_ENDPOINT_URL",
    "region": "AWS_REGION",
    "access_key_id": "AWS_ACCESS_KEY_ID",
    "secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}


@dataclass(frozen=True)
class Credentials:
    """The object-store settings with each empty key filled from its AWS_* variable."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None

    @classmethod
    def resolve(cls, options: ObjectStoreSettings, environ: dict[str, str] | None = None) -> Credentials:
        env = os.environ if environ is None else environ
        values = {key: getattr(options, key) or env.get(var) or None for key, var in ENV_KEYS.items()}
        if values["region"] is None:
            values["region"] = env.get("AWS_DEFAULT_REGION") or "us-east-1"
        return cls(**values)


@dataclass(frozen=True)
class SharedLocation:
    """A parsed ``storage.shared_url``: an S3 bucket and prefix, or a local folder."""

    url: str
    bucket: str | None  # None: a local folder
    prefix: str  # the key prefix in the bucket, or the folder's absolute path
    credentials: Credentials

    @property
    def is_s3(self) -> bool:
        return self.bucket is not None

    def path(self, *parts: str) -> str:
        """A path under the location as its pyarrow file system names it."""
        base = f"{self.bucket}/{self.prefix}".rstrip("/") if self.is_s3 else self.prefix
        return "/".join([base, *parts])

    def url_of(self, *parts: str) -> str:
        """A URL under the location, as polars and LanceDB take it."""
        return "/".join([self.url, *parts])

    def filesystem(self) -> Any:
        """The pyarrow file system holding the location."""
        from pyarrow import fs

        if not self.is_s3:
            return fs.LocalFileSystem()
        c = self.credentials
        return fs.S3FileSystem(
            access_key=c.access_key_id,
            secret_key=c.secret_access_key,
            session_token=c.session_token,
            region=c.region,
            endpoint_override=c.endpoint_url,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            request_timeout=REQUEST_TIMEOUT_SECONDS,
            retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=2),
        )

    def s3_client(self) -> Any:
        """A boto3 client for the location's endpoint: what the pointer's conditional PUT goes through
        (pyarrow's S3 file system cannot send If-Match / If-None-Match)."""
        import boto3
        from botocore.config import Config

        c = self.credentials
        return boto3.client(
            "s3",
            endpoint_url=c.endpoint_url,
            region_name=c.region,
            aws_access_key_id=c.access_key_id,
            aws_secret_access_key=c.secret_access_key,
            aws_session_token=c.session_token,
            config=Config(
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                read_timeout=REQUEST_TIMEOUT_SECONDS,
                retries={"max_attempts": 2, "mode": "standard"},
            ),
        )


def shared_location(settings: Settings, environ: dict[str, str] | None = None) -> SharedLocation | None:
    """The project's shared location (None: ``storage.shared_url`` is not set)."""
    url = settings.storage.shared_url
    if not url:
        return None
    credentials = Credentials.resolve(settings.storage.object_store, environ)
    match = re.match(r"^s3://([^/]+)/?(.*)$", url)
    if match:
        return SharedLocation(url, match.group(1), match.group(2).strip("/"), credentials)
    folder = settings.path(url.removeprefix("file://"))
    return SharedLocation(folder.as_posix(), None, str(folder.resolve()), credentials)


# What pyarrow's S3 errors (the AWS SDK's) say, and what the user should do about each.
_S3_PROBLEMS = (
    (
        ("NO_SUCH_BUCKET", "NoSuchBucket", "bucket does not exist"),
        "the bucket {bucket} does not exist on {endpoint}; create it or correct storage.shared_url.",
    ),
    (
        ("ACCESS_DENIED", "AccessDenied", "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId", "SIGNATURE_DOES_NOT_MATCH")
        + ("SignatureDoesNotMatch", "InvalidClientTokenId", "Forbidden", "403"),
        "{endpoint} refused the credentials for {url}; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
        "(or storage.object_store) to a key that may read and write the bucket.",
    ),
    (
        ("NETWORK_CONNECTION", "Couldn't connect", "curlCode", "connect", "Timeout", "timed out", "resolve host"),
        "the object store {endpoint} could not be reached for {url}; check AWS_ENDPOINT_URL "
        "(or storage.object_store.endpoint_url) and that the server is running.",
    ),
)


def describe_store_error(location: SharedLocation, exc: BaseException) -> UserError:
    """One sentence for a failed object-store or shared-folder operation: what and how to fix it."""
    text = str(exc)
    if not location.is_s3:
        return UserError(
            f"the shared folder {location.prefix} could not be used ({text}); "
            "check that it is mounted and writable, or correct storage.shared_url."
        )
    endpoint = location.credentials.endpoint_url or "AWS S3"
    for words, message in _S3_PROBLEMS:
        if any(word.lower() in text.lower() for word in words):
            return UserError(message.format(bucket=location.bucket, endpoint=endpoint, url=location.url))
    return UserError(
        f"the object store {endpoint} failed for {location.url} ({text.splitlines()[0] if text else type(exc).__name__}); "
        "check storage.shared_url and the AWS_* settings."
    )

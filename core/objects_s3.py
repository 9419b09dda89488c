"""S3-compatible object storage through boto3 (the `ObjectStore` of core/objects_base.py for s3:// URLs).

Why boto3 (not obstore): its managed transfer does multipart uploads with a checksum the store verifies per part
(`ChecksumAlgorithm=SHA256`; SeaweedFS, Ceph RGW, MinIO and AWS refuse a part whose bytes do not match with
BadDigest), and it has ranged GETs, HEAD with user metadata, server-side copy (replicas) and paginated listings,
all of it the API every S3-compatible store is tested against. Its own retries are off: connection errors,
timeouts and 5xx go through the shared retry policy (harvesters/retry.py) like every other remote call.
"""

from __future__ import annotations

import io
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

from swath.core.masking import mask_text, mask_url
from swath.core.objects_base import (
    SHA1_METADATA,
    ObjectInfo,
    RetryPlan,
    StorageRefused,
    StorageTarget,
    StorageUnavailable,
    file_sha1,
)

T = TypeVar("T")
MULTIPART_THRESHOLD = 64 * 1024 * 1024  # a larger file goes up in parts (a failed part is sent again alone)
PART_SIZE = 16 * 1024 * 1024  # S3's smallest part is 5 MiB; 16 MiB keeps a 100 MB WARC under ten parts
# error codes that mean "try again later" even with a 4xx status (S3's throttling and request timeouts)
_TRANSIENT_CODES = frozenset({"RequestTimeout", "RequestTimeTooSkewed", "SlowDown", "Throttling",
                              "ThrottlingException", "RequestLimitExceeded", "ServiceUnavailable", "InternalError"})
_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
_CLIENTS: dict[tuple[str, str, str, str, float], Any] = {}  # S3Store._client
_CLIENTS_LOCK = threading.Lock()


class S3Store:
    """Objects under `s3://bucket/prefix/`; a key is the path below the prefix (the data root's layout)."""

    def __init__(self, *, target: StorageTarget, retry: RetryPlan, timeout: float = 60.0,
                 multipart_threshold: int = MULTIPART_THRESHOLD, part_size: int = PART_SIZE,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        if not target.bucket:
            raise StorageRefused(f"SWATH_STORAGE_URL must be s3://bucket[/prefix], got {mask_url(target.url)!r}")
        self.target = target
        self.retry = retry
        self.timeout = timeout
        self.multipart_threshold = multipart_threshold
        self.part_size = part_size
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"S3Store({self.target.url!r}, endpoint={mask_url(self.target.endpoint)!r})"

    # --- keys and URLs ---
    def _key(self, key: str) -> str:
        key = key.strip("/")
        if not key or any(part in ("", ".", "..") for part in key.split("/")):
            raise StorageRefused(f"not an object key: {key!r}")
        return f"{self.target.prefix}/{key}" if self.target.prefix else key

    def url(self, key: str) -> str:
        return f"s3://{self.target.bucket}/{self._key(key)}"

    def _relative(self, full_key: str) -> str:
        prefix = f"{self.target.prefix}/" if self.target.prefix else ""
        return full_key[len(prefix):]

    # --- the interface ---
    def put_file(self, key: str, path: Path, *, sha1: str | None = None,
                 metadata: Mapping[str, str] | None = None) -> ObjectInfo:
        sha1 = sha1 or file_sha1(path)
        size = path.stat().st_size

        def upload() -> ObjectInfo:
            self._upload(key, path, sha1, metadata or {})
            info = self._head(key)
            # the store checked every part's SHA-256; this checks it is the object we meant (size, our SHA-1)
            if info is None or info.size != size or info.sha1 != sha1:
                raise _Mismatch(f"object {self.url(key)} does not match {path.name} after upload "
                                f"({'missing' if info is None else f'{info.size} bytes, sha1 {info.sha1}'})")
            return info

        return self._call(f"upload {path.name} to {self.url(key)}", upload)

    def head(self, key: str) -> ObjectInfo | None:
        return self._call(f"HEAD {self.url(key)}", lambda: self._head(key))

    def open_range(self, key: str, start: int, length: int | None = None) -> IO[bytes]:
        if length == 0:
            return io.BytesIO(b"")
        what = f"GET {self.url(key)} from byte {start}"
        body = self._call(what, lambda: self._get(key, start, length))
        return _Body(body, lambda exc: self._error(f"{what}: reading", exc))  # type: ignore[return-value]

    def read_range(self, key: str, start: int, length: int) -> bytes:
        if length == 0:
            return b""

        def read() -> bytes:
            with self._get(key, start, length) as body:
                return body.read()

        return self._call(f"GET {self.url(key)} bytes {start}+{length}", read)

    def delete(self, key: str) -> None:
        self._call(f"DELETE {self.url(key)}",
                   lambda: self._client().delete_object(Bucket=self.target.bucket, Key=self._key(key)))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        if any(part in (".", "..") for part in prefix.split("/")):
            raise StorageRefused(f"not a key prefix: {prefix!r}")
        full = (f"{self.target.prefix}/" if self.target.prefix else "") + prefix.lstrip("/")
        token: str | None = None
        while True:
            args: dict[str, Any] = {"Bucket": self.target.bucket, "Prefix": full}
            if token:
                args["ContinuationToken"] = token
            page = self._call(f"LIST s3://{self.target.bucket}/{full}",
                              lambda args=args: self._client().list_objects_v2(**args))  # type: ignore[misc]
            for item in page.get("Contents", []):
                key = self._relative(item["Key"])
                yield ObjectInfo(key=key, url=f"s3://{self.target.bucket}/{item['Key']}", size=int(item["Size"]))
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    # --- boto3 ---
    def _client(self) -> Any:
        # one client per store target and process, shared by every harvest and thread: building one costs ~0.2 s
        # of CPU (botocore loads its service models), which a harvest and its upload thread paid each time
        target = self.target
        cache_key = (target.endpoint, target.region, target.access_key_id, target.secret_access_key, self.timeout)
        with _CLIENTS_LOCK:  # a client is safe to share between threads once built; building one is not
            client = _CLIENTS.get(cache_key)
            if client is None:
                client = _CLIENTS[cache_key] = self._new_client()
        return client

    def _new_client(self) -> Any:
        import boto3
        from botocore.config import Config as BotoConfig

        return boto3.session.Session().client(
            "s3", endpoint_url=self.target.endpoint or None, region_name=self.target.region or "us-east-1",
            aws_access_key_id=self.target.access_key_id or None,
            aws_secret_access_key=self.target.secret_access_key or None,
            config=BotoConfig(connect_timeout=self.timeout, read_timeout=self.timeout,
                              retries={"total_max_attempts": 1, "mode": "standard"},  # ours: _call
                              s3={"addressing_style": "path"}, user_agent_extra="swath",
                              max_pool_connections=32))  # shared by the harvests of a worker and their uploads

    def _upload(self, key: str, path: Path, sha1: str, metadata: Mapping[str, str]) -> None:
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(multipart_threshold=self.multipart_threshold, multipart_chunksize=self.part_size,
                                max_concurrency=4, num_download_attempts=1)
        self._client().upload_file(
            str(path), self.target.bucket, self._key(key), Config=config,
            ExtraArgs={"ChecksumAlgorithm": "SHA256", "Metadata": {**metadata, SHA1_METADATA: sha1},
                       "ContentType": "application/warc" if path.name.endswith((".warc", ".warc.gz"))
                       else "application/octet-stream"})

    def _get(self, key: str, start: int, length: int | None) -> IO[bytes]:
        end = "" if length is None else str(start + length - 1)
        answer = self._client().get_object(Bucket=self.target.bucket, Key=self._key(key), Range=f"bytes={start}-{end}")
        body: IO[bytes] = answer["Body"]  # botocore's StreamingBody: read in pieces, closed by the caller
        return body

    def _head(self, key: str) -> ObjectInfo | None:
        try:
            answer = self._client().head_object(Bucket=self.target.bucket, Key=self._key(key))
        except Exception as exc:
            if _error_code(exc) in _MISSING:
                return None
            raise
        return ObjectInfo(key=key, url=self.url(key), size=int(answer["ContentLength"]),
                          sha1=(answer.get("Metadata") or {}).get(SHA1_METADATA))

    def _call(self, what: str, action: Callable[[], T]) -> T:
        """`action`, again after connection errors, timeouts and 5xx as the shared policy says; then a coded
        error whose message names no credential."""
        failures = 0
        while True:
            try:
                return action()
            except (StorageRefused, StorageUnavailable):
                raise
            except Exception as exc:
                error = self._error(what, exc)
                if isinstance(error, StorageRefused) or failures >= self.retry.retries:
                    raise error from None  # the boto3 chain may hold the request's signed headers
                failures += 1
                self._sleep(self.retry.backoff_delay(failures, random.random()))

    def _error(self, what: str, exc: BaseException) -> StorageUnavailable | StorageRefused:
        status, code = _error_status(exc), _error_code(exc)
        reason = f"{type(exc).__name__}: {exc}"
        text = mask_text(f"{what} at {self.target.endpoint or 'AWS S3'}: {reason}", self.target.secrets)
        if isinstance(exc, _Mismatch) or _is_transient(exc, status, code):
            return StorageUnavailable(text, status=status)
        return StorageRefused(text, status=status)


class _Body:
    """A ranged GET's stream whose read errors (a connection cut, a read timeout) are coded like the request's;
    not retried: the caller knows how far it got and may ask for the rest."""

    def __init__(self, body: IO[bytes], error: Callable[[BaseException], StorageUnavailable | StorageRefused]) -> None:
        self._body: Any = body  # botocore's StreamingBody: read(None) reads to the end
        self._coded = error

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._body.read(None if size is None or size < 0 else size)
            return data
        except Exception as exc:
            raise self._coded(exc) from None

    def close(self) -> None:
        self._body.close()

    def __enter__(self) -> _Body:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Mismatch(Exception):
    """The object after an upload is not the file (a store that lost or mixed bytes): uploaded again."""


def _client_error(exc: BaseException) -> Any:
    """The botocore ClientError behind `exc` (boto3's S3UploadFailedError wraps one as its context)."""
    seen: BaseException | None = exc
    while seen is not None:
        if hasattr(seen, "response") and isinstance(getattr(seen, "response", None), dict):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _error_code(exc: BaseException) -> str | None:
    found = _client_error(exc)
    return None if found is None else str(found.response.get("Error", {}).get("Code", "")) or None


def _error_status(exc: BaseException) -> int | None:
    found = _client_error(exc)
    if found is None:
        return None
    status = found.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status else None


def _is_transient(exc: BaseException, status: int | None, code: str | None) -> bool:
    """Connection errors, timeouts, 5xx and throttling: the store may answer a later try."""
    from botocore.exceptions import (
        BotoCoreError,
        ConnectionError,
        HTTPClientError,
        IncompleteReadError,
        ReadTimeoutError,
        ResponseStreamingError,
    )
    from urllib3.exceptions import HTTPError as Urllib3Error

    if code in _TRANSIENT_CODES or (status is not None and (status >= 500 or status == 429)):
        return True
    # the network or the store's side: no answer, a cut connection, a body shorter than announced
    network = (ConnectionError, HTTPClientError, ReadTimeoutError, IncompleteReadError, ResponseStreamingError,
               Urllib3Error, OSError)
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, network):
            return True
        if isinstance(seen, BotoCoreError) and "Credentials" in type(seen).__name__:
            return False  # NoCredentialsError and friends: configuration, not the network
        seen = seen.__cause__ or seen.__context__
    return False

"""Create-if-absent on S3 and S3-compatible stores: a PUT with ``If-None-Match: *``.

The store answers 412 PreconditionFailed when the key exists (and 409 ConditionalRequestConflict
while another conditional write of the key is in flight), so two machines that both try to
create ``snapshot-N`` cannot both succeed, with no lock. pyarrow's S3 file system cannot send
the header, so the PUT goes through a botocore client built from the pyarrow file system's own
settings (endpoint, credentials, region, addressing style): the ``[s3]`` extra.

Not every S3-compatible store honours the header; some ignore it and overwrite. So before the
first conditional create in a bucket, :meth:`S3ConditionalPut.supported` checks once per process
that the store refuses a second create of a probe key.
"""

from __future__ import annotations

import random
import threading
import time
import uuid

import pyarrow.fs as pafs

from paimon_lab.errors import UnsupportedFileSystemError

EXTRA = "pip install 'paimon-lab[s3]'"
BOTOCORE_MIN = "1.35.2"   # the first botocore whose S3 PutObject takes IfNoneMatch
CONFLICT_RETRIES = 10

# (endpoint, bucket) -> whether the store honours If-None-Match; one probe per process
_probed: dict[tuple[str, str], bool] = {}
_probe_lock = threading.Lock()


def _botocore():
    """botocore, imported only when a commit to S3 needs it (an optional dependency)."""
    try:
        import botocore.config
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise UnsupportedFileSystemError(
            "Commits to s3:// create the snapshot file with a conditional write (If-None-Match), "
            f"which needs botocore >= {BOTOCORE_MIN}: {EXTRA}") from None
    if "IfNoneMatch" not in botocore.session.get_session().get_service_model("s3") \
            .operation_model("PutObject").input_shape.members:
        raise UnsupportedFileSystemError(
            f"botocore {botocore.__version__} cannot send If-None-Match on an S3 PUT; "
            f"commits to s3:// need botocore >= {BOTOCORE_MIN}: {EXTRA}")
    return botocore


def s3_settings(fs: pafs.S3FileSystem) -> dict:
    """The settings of a pyarrow S3 file system (what it pickles itself as)."""
    return dict(fs.__reduce__()[1][0])


class S3ConditionalPut:
    """Conditional creates on the store a pyarrow :class:`~pyarrow.fs.S3FileSystem` talks to."""

    def __init__(self, fs: pafs.S3FileSystem):
        self.settings = s3_settings(fs)
        self._client = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        s = self.settings
        return f"{s.get('scheme') or 'https'}://{s['endpoint_override']}" if s.get("endpoint_override") else "aws"

    def client(self):
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self):
        bc = _botocore()
        s = self.settings
        config: dict = {"retries": {"mode": "standard", "max_attempts": 5}}
        if s.get("endpoint_override"):
            config["s3"] = {"addressing_style": "virtual" if s.get("force_virtual_addressing") else "path"}
        if s.get("anonymous"):
            config["signature_version"] = bc.UNSIGNED
        for ours, theirs in (("connect_timeout", "connect_timeout"), ("request_timeout", "read_timeout")):
            if (s.get(ours) or -1) > 0:
                config[theirs] = s[ours]
        kwargs: dict = {"config": bc.config.Config(**config), "region_name": s.get("region") or None}
        if s.get("endpoint_override"):
            kwargs["endpoint_url"] = self.endpoint
        if s.get("access_key"):
            kwargs.update(aws_access_key_id=s["access_key"], aws_secret_access_key=s.get("secret_key"),
                          aws_session_token=s.get("session_token") or None)
        if s.get("tls_ca_file_path"):
            kwargs["verify"] = s["tls_ca_file_path"]
        return bc.session.get_session().create_client("s3", **kwargs)

    # ------------------------------------------------------------------ creating
    def _put(self, bucket: str, key: str, data: bytes) -> bool | None:
        """One conditional PUT: True created, False exists, None a conflicting write in flight."""
        bc = _botocore()
        try:
            self.client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except bc.exceptions.ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "PreconditionFailed" or status == 412:
                return False
            if code == "ConditionalRequestConflict" or status == 409:
                return None
            raise OSError(f"Conditional PUT of s3://{bucket}/{key} failed: {e}") from e

    def _holds(self, bucket: str, key: str, data: bytes) -> bool:
        try:
            body = self.client().get_object(Bucket=bucket, Key=key)["Body"]
            try:
                return body.read() == data
            finally:
                body.close()
        except _botocore().exceptions.ClientError:
            return False

    def create(self, bucket: str, key: str, data: bytes) -> bool:
        """Create ``key`` with ``data`` unless it exists; never overwrites.

        A 412 after botocore retried a PUT whose first answer was lost may mean the key is ours;
        it is when it holds exactly ``data`` (a snapshot names its commit user and time), so the
        caller never takes its own commit for a lost race and deletes the files it references.
        """
        pause = 0.02
        for _ in range(CONFLICT_RETRIES):
            created = self._put(bucket, key, data)
            if created is True:
                return True
            if created is False:
                return self._holds(bucket, key, data)
            time.sleep(pause * random.uniform(0.5, 1.0))
            pause = min(pause * 2, 0.5)
        return False  # not created by us; the caller re-reads and retries as a lost race

    # ------------------------------------------------------------------ probing
    def supported(self, bucket: str, prefix: str) -> bool:
        """Whether the store refuses a second conditional create of a key (probed once per
        process and bucket, with a hidden key under ``prefix`` that is deleted after)."""
        cache_key = (self.endpoint, bucket)
        with _probe_lock:
            if cache_key in _probed:
                return _probed[cache_key]
        key = f"{prefix.strip('/')}/.paimon-lab-conditional-put-probe-{uuid.uuid4().hex}".lstrip("/")
        try:
            first = self._put(bucket, key, b"1")
            second = self._put(bucket, key, b"2")
            honoured = first is True and second is False
        except OSError:   # e.g. 501 NotImplemented for the header
            honoured = False
        finally:
            try:
                self.client().delete_object(Bucket=bucket, Key=key)
            except Exception:  # noqa: BLE001  (a leftover hidden probe object is harmless)
                pass
        with _probe_lock:
            _probed[cache_key] = honoured
        return honoured


__all__ = ["S3ConditionalPut", "s3_settings", "EXTRA", "BOTOCORE_MIN"]

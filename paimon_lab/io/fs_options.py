"""File systems from Paimon-style catalog options (``s3.endpoint``, ``s3.access-key``...).

Paimon configures object stores through catalog options rather than code::

    from paimon_lab.io.fs_options import from_options
    io = from_options("s3://bucket/warehouse", {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key": "...", "s3.secret-key": "...",
        "s3.path.style.access": "true",
    })

Keys are accepted with the ``s3.`` prefix Paimon documents and with Hadoop's ``fs.s3a.``
spelling (``fs.s3a.endpoint``, ``fs.s3a.access.key``...). ``oss://`` warehouses take
``fs.oss.endpoint`` / ``fs.oss.accessKeyId`` / ``fs.oss.accessKeySecret`` and are reached
through the S3-compatible API. Without any of these options the file system is left to
:class:`~paimon_lab.io.file_io.FileIO` (pyarrow's defaults: environment variables, instance profiles).
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pafs

from paimon_lab.errors import OptionError
from paimon_lab.io.file_io import CommitLock, FileIO

S3_SCHEMES = ("s3", "s3a", "s3n")
OSS_SCHEMES = ("oss",)

# canonical name -> accepted spellings, first match wins
_S3_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("s3.endpoint", "fs.s3a.endpoint", "s3a.endpoint"),
    "access_key": ("s3.access-key", "s3.access.key", "fs.s3a.access.key", "s3a.access.key"),
    "secret_key": ("s3.secret-key", "s3.secret.key", "fs.s3a.secret.key", "s3a.secret.key"),
    "session_token": ("s3.session-token", "s3.session.token", "fs.s3a.session.token"),
    "region": ("s3.region", "s3.endpoint.region", "fs.s3a.endpoint.region", "fs.s3a.region"),
    "path_style": ("s3.path.style.access", "s3.path-style-access", "fs.s3a.path.style.access"),
    "ssl": ("s3.connection.ssl.enabled", "fs.s3a.connection.ssl.enabled"),
    "anonymous": ("s3.anonymous",),
    "request_timeout": ("s3.request-timeout",),
    "connect_timeout": ("s3.connect-timeout",),
}
_OSS_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("fs.oss.endpoint", "oss.endpoint"),
    "access_key": ("fs.oss.accessKeyId", "oss.access-key"),
    "secret_key": ("fs.oss.accessKeySecret", "oss.secret-key"),
    "session_token": ("fs.oss.securityToken", "oss.session-token"),
    "region": ("fs.oss.region", "oss.region"),
}


def _get(options: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for n in names:
        if n in options and options[n] is not None and str(options[n]) != "":
            return str(options[n])
    return None


def _bool(key: str, value: str | None) -> bool | None:
    if value is None:
        return None
    low = value.strip().lower()
    if low not in ("true", "false"):
        raise OptionError(f"Option '{key}' must be true or false, got '{value}'")
    return low == "true"


def _float(key: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise OptionError(f"Option '{key}' must be a number of seconds, got '{value}'") from None


def _s3_from(options: Mapping[str, str], keys: dict[str, tuple[str, ...]], *, virtual_default: bool) -> pafs.S3FileSystem:
    kwargs: dict = {}
    endpoint = _get(options, keys["endpoint"])
    scheme = None
    if endpoint:
        if "://" in endpoint:
            parsed = urlparse(endpoint)
            scheme = parsed.scheme.lower()
            if scheme not in ("http", "https"):
                raise OptionError(f"Object store endpoint '{endpoint}' must use http or https")
            endpoint = parsed.netloc + parsed.path.rstrip("/")
        kwargs["endpoint_override"] = endpoint
    ssl = _bool("connection.ssl.enabled", _get(options, keys.get("ssl", ())))
    if ssl is not None and scheme is None:
        scheme = "https" if ssl else "http"
    if scheme:
        kwargs["scheme"] = scheme
    access = _get(options, keys["access_key"])
    secret = _get(options, keys["secret_key"])
    if (access is None) != (secret is None):
        raise OptionError("Object store credentials need both an access key and a secret key")
    if access is not None:
        kwargs["access_key"] = access
        kwargs["secret_key"] = secret
        token = _get(options, keys["session_token"])
        if token:
            kwargs["session_token"] = token
    if _bool("s3.anonymous", _get(options, keys.get("anonymous", ()))):
        kwargs["anonymous"] = True
    region = _get(options, keys["region"])
    if region:
        kwargs["region"] = region
    elif endpoint:
        kwargs["region"] = "us-east-1"  # custom endpoints ignore it; avoids a region lookup
    path_style = _bool("s3.path.style.access", _get(options, keys.get("path_style", ())))
    if endpoint:
        virtual = virtual_default if path_style is None else not path_style
        kwargs["force_virtual_addressing"] = virtual
    for name in ("request_timeout", "connect_timeout"):
        value = _float(name, _get(options, keys.get(name, ())))
        if value is not None:
            kwargs[name] = value
    return pafs.S3FileSystem(**kwargs)


def has_filesystem_options(warehouse: str, options: Mapping[str, str] | None) -> bool:
    """Whether ``options`` configure the file system of ``warehouse``."""
    if not options:
        return False
    scheme = urlparse(warehouse).scheme.lower() if "://" in warehouse else ""
    if scheme in S3_SCHEMES:
        table = _S3_KEYS
    elif scheme in OSS_SCHEMES:
        table = _OSS_KEYS
    else:
        return False
    return any(_get(options, names) is not None for names in table.values())


def filesystem_from_options(warehouse: str, options: Mapping[str, str] | None) -> pafs.FileSystem | None:
    """A pyarrow file system for ``warehouse`` configured by ``options``; None when the options
    say nothing about it (then FileIO picks pyarrow's default for the URI)."""
    scheme = urlparse(warehouse).scheme.lower() if "://" in warehouse else ""
    if not has_filesystem_options(warehouse, options):
        # pyarrow knows s3:// but not Hadoop's s3a:// and s3n:// spellings of it
        return pafs.S3FileSystem() if scheme in ("s3a", "s3n") else None
    if scheme in S3_SCHEMES:
        return _s3_from(options, _S3_KEYS, virtual_default=False)
    # OSS speaks the S3 protocol but only with virtual-hosted buckets.
    return _s3_from(options, _OSS_KEYS, virtual_default=True)


def from_options(warehouse: str, options: Mapping[str, str] | None = None, *,
                 lock: CommitLock | None = None) -> FileIO:
    """A FileIO for ``warehouse`` whose file system is configured by Paimon-style ``options``.

    ``s3a://`` and ``s3n://`` warehouses are read as ``s3://``. Commits to S3 create the snapshot
    file with a conditional write (under ``lock`` too, when one is given); on other object stores
    they need ``lock`` (see :meth:`~paimon_lab.io.file_io.FileIO.try_create`)."""
    return FileIO(warehouse, filesystem_from_options(warehouse, options), lock)


__all__ = ["from_options", "filesystem_from_options", "has_filesystem_options"]

"""The Hive Metastore Thrift client of the Hive catalog, its configuration and its commit lock.

The Thrift stubs are the ones generated from the metastore's IDL that ship with ``pymetastore``
(``pip install 'paimon-lab[hive]'``); this module only connects, reconnects and translates
errors. ``hive-site.xml`` gives ``hive.metastore.uris`` and ``hive.metastore.warehouse.dir``
when the catalog options do not.
"""

from __future__ import annotations

import getpass
import os
import random
import socket
import threading
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlparse

from paimon_lab.core.options import option_seconds
from paimon_lab.errors import CatalogError, HiveMetastoreError, LockTimeoutError, OptionError
from paimon_lab.io.file_io import CommitLock

HIVE_SITE = "hive-site.xml"

# Options (names as in Java Paimon).
OPT_URI = "uri"
OPT_HIVE_CONF_DIR = "hive-conf-dir"
OPT_LOCK_ENABLED = "lock.enabled"
OPT_ACQUIRE_TIMEOUT = "lock-acquire-timeout"    # Java default 8 min
OPT_CHECK_MAX_SLEEP = "lock-check-max-sleep"    # Java default 8 s


def _thrift():
    try:
        from thrift.protocol import TBinaryProtocol
        from thrift.Thrift import TException
        from thrift.transport import TSocket, TTransport
        from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
    except ImportError:
        raise CatalogError("The Hive catalog needs the Hive Metastore Thrift client: "
                           "pip install 'paimon-lab[hive]' (pymetastore and thrift)") from None
    return TSocket, TTransport, TBinaryProtocol, ThriftHiveMetastore, ttypes, TException


def ttypes():
    """The metastore's Thrift structs (Table, StorageDescriptor, LockRequest, ...)."""
    return _thrift()[4]


def read_hive_site(conf_dir: str) -> dict[str, str]:
    """The properties of ``{conf_dir}/hive-site.xml``."""
    path = os.path.join(conf_dir, HIVE_SITE)
    if not os.path.isfile(path):
        raise CatalogError(f"No {HIVE_SITE} in hive-conf-dir '{conf_dir}'")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise CatalogError(f"Cannot parse {path}: {e}") from None
    out = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            out[name.strip()] = (value or "").strip()
    return out


def hive_conf(options: Mapping[str, str]) -> dict[str, str]:
    """Java's HiveConf for a catalog: ``hive-site.xml`` from ``hive-conf-dir`` (or
    ``$HIVE_CONF_DIR``), overridden by the catalog options, ``uri`` as ``hive.metastore.uris``."""
    conf_dir = options.get(OPT_HIVE_CONF_DIR) or os.environ.get("HIVE_CONF_DIR")
    conf = read_hive_site(conf_dir) if conf_dir else {}
    conf.update(options)
    if options.get(OPT_URI):
        conf["hive.metastore.uris"] = options[OPT_URI]
    return conf


def metastore_addresses(uris: str) -> list[tuple[str, int]]:
    """``thrift://host:port[,thrift://host2:port]`` as (host, port) pairs."""
    out = []
    for uri in (u.strip() for u in uris.split(",")):
        if not uri:
            continue
        parsed = urlparse(uri)
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise CatalogError(f"Hive metastore uri '{uri}' is not thrift://host:port")
        out.append((parsed.hostname, parsed.port or 9083))
    if not out:
        raise CatalogError("The Hive catalog needs the metastore's address: the 'uri' option "
                           "(thrift://host:9083) or hive.metastore.uris in hive-site.xml")
    return out


class MetastoreClient:
    """One Thrift connection to a Hive Metastore, shared by threads one call at a time and
    reopened (on the next address too) when the transport breaks."""

    def __init__(self, uris: str, timeout: float = 600.0):
        self.uris = uris
        self.addresses = metastore_addresses(uris)
        self.timeout = timeout
        self._lock = threading.RLock()
        self._transport = None
        self._client = None
        self.types = ttypes()

    def _open(self) -> None:
        TSocket, TTransport, TBinaryProtocol, ThriftHiveMetastore, _, _ = _thrift()
        errors = []
        for host, port in self.addresses:
            sock = TSocket.TSocket(host, port)
            sock.setTimeout(int(self.timeout * 1000))
            transport = TTransport.TBufferedTransport(sock)
            try:
                transport.open()
            except TTransport.TTransportException as e:
                errors.append(f"{host}:{port}: {e}")
                continue
            self._transport = transport
            self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
            return
        raise CatalogError(f"Cannot reach the Hive metastore at {self.uris} ({'; '.join(errors)})")

    def call(self, method: str, *args: Any) -> Any:
        """``client.method(*args)``; a broken connection is reopened and the call tried once more.
        The metastore's exceptions become :class:`HiveMetastoreError` with their ``kind`` (the
        generated ones are immutable: they cannot pass through a ``with`` block)."""
        _, TTransport, _, _, _, TException = _thrift()
        with self._lock:
            for attempt in (0, 1):
                if self._client is None:
                    self._open()
                try:
                    return getattr(self._client, method)(*args)
                except (TTransport.TTransportException, OSError, EOFError) as e:
                    self.close()
                    if attempt:
                        raise HiveMetastoreError(f"Hive metastore call {method} failed: {e}", "transport") from None
                except TException as e:
                    kind = type(e).__name__
                    message = getattr(e, "message", None) or str(e)
                    raise HiveMetastoreError(f"Hive metastore {method}: {kind}: {message}", kind) from None

    def close(self) -> None:
        with self._lock:
            if self._transport is not None:
                try:
                    self._transport.close()
                except Exception:  # noqa: BLE001 - closing a broken socket
                    pass
            self._transport = self._client = None


class HiveCommitLock(CommitLock):
    """The metastore's table lock around a commit, as Java Paimon's ``HiveCatalogLock`` takes it:
    an EXCLUSIVE TABLE-level lock on ``db.table``, polled with ``check_lock`` (sleeps doubling from
    50 ms up to ``check_max_sleep``) until acquired or ``acquire_timeout`` passes, then unlocked.
    Java writers committing through a Hive catalog on the same metastore are serialized with us."""

    def __init__(self, client: MetastoreClient, table_of: Callable[[str], tuple[str, str] | None], *,
                 acquire_timeout: float = 480.0, check_max_sleep: float = 8.0):
        self.client = client
        self.table_of = table_of
        self.acquire_timeout = float(acquire_timeout)
        self.check_max_sleep = max(0.001, float(check_max_sleep))
        self._local = threading.Lock()
        self._fallback = CommitLock()

    def acquire(self, database: str, table: str) -> int:
        """Take the lock; its id (for :meth:`release`)."""
        t = self.client.types
        component = t.LockComponent(type=t.LockType.EXCLUSIVE, level=t.LockLevel.TABLE, dbname=database,
                                    tablename=table)
        component.operationType = None  # not sent, as Java leaves it unset
        request = t.LockRequest(component=[component], user=getpass.getuser(), hostname=socket.gethostname())
        start = time.monotonic()
        response = self.client.call("lock", request)
        lock_id = response.lockid
        pause = 0.05
        try:
            while response.state == t.LockState.WAITING and time.monotonic() - start < self.acquire_timeout:
                pause = min(pause * 2, self.check_max_sleep)
                time.sleep(pause * random.uniform(0.75, 1.0))
                response = self.client.call("check_lock", t.CheckLockRequest(lockid=lock_id))
        finally:
            if response.state != t.LockState.ACQUIRED:
                self.release(lock_id)
        if response.state != t.LockState.ACQUIRED:
            state = t.LockState._VALUES_TO_NAMES.get(response.state, response.state)
            raise LockTimeoutError(
                f"Could not acquire the Hive metastore lock on {database}.{table} within "
                f"{self.acquire_timeout:g} s (state {state}); raise '{OPT_ACQUIRE_TIMEOUT}'")
        return lock_id

    def release(self, lock_id: int) -> None:
        if lock_id and lock_id > 0:
            try:
                self.client.call("unlock", self.client.types.UnlockRequest(lockid=lock_id))
            except HiveMetastoreError as e:
                if e.kind != "NoSuchLockException":
                    raise

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        table = self.table_of(key)
        if table is None:  # a path outside any table of the catalog: this machine's lock
            with self._fallback.hold(key):
                yield
            return
        # One metastore connection per catalog: threads of this process queue here first.
        with self._local:
            lock_id = self.acquire(*table)
            try:
                yield
            finally:
                self.release(lock_id)

    def __repr__(self) -> str:
        return f"HiveCommitLock({self.client.uris!r})"


def lock_enabled(options: Mapping[str, str], object_store: bool) -> bool:
    """Java's default: ``lock.enabled`` when given, else on exactly for object stores."""
    value = options.get(OPT_LOCK_ENABLED)
    if value is None:
        return object_store
    value = str(value).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"Option '{OPT_LOCK_ENABLED}' must be true or false, not '{options[OPT_LOCK_ENABLED]}'")
    return value == "true"


def commit_lock_from_options(client: MetastoreClient, options: Mapping[str, str], object_store: bool,
                             table_of: Callable[[str], tuple[str, str] | None]) -> HiveCommitLock | None:
    """The metastore lock the options ask for (None: the FileIO's own)."""
    if not lock_enabled(options, object_store):
        return None
    return HiveCommitLock(client, table_of, acquire_timeout=option_seconds(options, OPT_ACQUIRE_TIMEOUT, 480.0),
                          check_max_sleep=option_seconds(options, OPT_CHECK_MAX_SLEEP, 8.0))


__all__ = ["MetastoreClient", "HiveCommitLock", "hive_conf", "read_hive_site", "commit_lock_from_options",
           "lock_enabled", "ttypes"]

"""What a statement handler receives: the :class:`Statement` (its kind, modifiers and tokens) and
the session it runs in, seen through the :class:`SessionContext` protocol (the Session
implements it), so handlers import neither the session nor each other."""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

import pyarrow as pa

from paimon_lab.sql.catalogs import MemoryCatalog, MemTable, PaimonCatalog, Scope
from paimon_lab.sql.feedback import Feedback
from paimon_lab.sql.lexer import TokenStream

if TYPE_CHECKING:
    from sqlglot import exp

    from paimon_lab.sql.datagen import DatagenSpec
    from paimon_lab.sql.errors import SqlError
    from paimon_lab.sql.prepared import Prepared, Scan
    from paimon_lab.sql.relations import Relation
    from paimon_lab.sql.rewrite import Rewritten

ErrorFactory = Callable[[str], "SqlError"]


@dataclass
class Statement:
    """A statement being run: ``kind`` from its leading keywords (e.g. ``"CREATE VIEW"``), the
    modifiers among them, and the token stream positioned after them."""

    kind: str
    ts: TokenStream
    temporary: bool = False
    or_replace: bool = False


class SessionContext(Protocol):
    catalogs: dict[str, MemoryCatalog | PaimonCatalog]
    current: Scope
    settings: dict[str, str]
    temporary: dict[tuple[str, str, str], MemTable]
    last_scans: list[Scan]
    last_snapshot_id: int | None  # setting it also sets feedback.snapshot_id
    feedback: Feedback  # the running statement's: handlers fill its target, rows and note
    timers: dict[tuple[str, str, str], threading.Timer]  # materialized tables' refresh timers
    lock: threading.RLock

    # settings
    def setting(self, key: str, default: str | None = None) -> str | None: ...
    @property
    def batch_mode(self) -> bool: ...
    def local_tz(self) -> dt.tzinfo: ...
    def time_zone_name(self) -> str: ...
    def parse_timestamp(self, text: str, what: str = "timestamp") -> int: ...
    def seed(self) -> int: ...
    def checkpoint_interval(self) -> int | None: ...
    def datagen_total(self, spec: DatagenSpec, error: ErrorFactory | None = None) -> int: ...

    # names and catalogs
    def add_catalog(self, name: str, catalog: Any, *, use: bool = False,
                    options: dict[str, str] | None = None) -> None: ...
    def qualify(self, parts: list[str], scope: Scope | None = None,
                error: ErrorFactory | None = None) -> tuple[str, str, str]: ...
    def catalog_entry(self, name: str, error: ErrorFactory | None = None) -> MemoryCatalog | PaimonCatalog: ...
    def paimon_catalog(self, name: str, error: ErrorFactory | None = None) -> PaimonCatalog: ...
    def get_table(self, parts: list[str], scope: Scope | None = None, error: ErrorFactory | None = None): ...
    def stop_refresh(self, catalog: str, database: str, name: str) -> None: ...

    # queries
    def prepare_query(self, rw: Rewritten, ast: exp.Expression, scope: Scope | None = None,
                      bindings: dict[str, Relation] | None = None) -> Prepared: ...
    def query(self, rw: Rewritten, ast: exp.Expression, scope: Scope | None = None,
              bindings: dict[str, Relation] | None = None) -> pa.Table: ...

"""The exception hierarchy of paimon-lab.

Every error the engine raises on purpose derives from :class:`PaimonLabError`, so callers can
catch one type; the subclasses say what went wrong.
"""

from __future__ import annotations

import numbers


class PaimonLabError(Exception):
    """Base class of all paimon-lab errors."""


class CatalogError(PaimonLabError):
    """A catalog operation failed."""


class DatabaseNotExistError(CatalogError):
    def __init__(self, database: str):
        super().__init__(f"Database '{database}' does not exist")
        self.database = database


class DatabaseAlreadyExistError(CatalogError):
    def __init__(self, database: str):
        super().__init__(f"Database '{database}' already exists")
        self.database = database


class DatabaseNotEmptyError(CatalogError):
    def __init__(self, database: str):
        super().__init__(f"Database '{database}' is not empty; drop it with cascade=True")
        self.database = database


class TableNotExistError(CatalogError):
    def __init__(self, identifier: str):
        super().__init__(f"Table '{identifier}' does not exist")
        self.identifier = identifier


class TableAlreadyExistError(CatalogError):
    def __init__(self, identifier: str):
        super().__init__(f"Table '{identifier}' already exists")
        self.identifier = identifier


class InvalidIdentifierError(CatalogError):
    """A database or table name that cannot be used."""


class JdbcCatalogError(CatalogError):
    """The catalog database could not be reached or refused a statement."""


class HiveMetastoreError(CatalogError):
    """The Hive metastore could not be reached or refused a call; ``kind`` names the metastore's
    exception (``NoSuchObjectException``, ``AlreadyExistsException``, ``MetaException``...)."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind


class ViewNotExistError(CatalogError):
    def __init__(self, identifier: str):
        super().__init__(f"View '{identifier}' does not exist")
        self.identifier = identifier


class ViewAlreadyExistError(CatalogError):
    def __init__(self, identifier: str, detail: str | None = None):
        super().__init__(f"View '{identifier}' already exists" if detail is None
                         else f"Cannot create view '{identifier}': {detail}")
        self.identifier = identifier


class SchemaError(PaimonLabError):
    """A table schema is invalid, or data does not match it."""


class UnsupportedTypeError(SchemaError):
    """A data type that paimon-lab cannot represent or convert."""


class DataValidationError(SchemaError):
    """Data handed to a write does not fit the table schema."""


class UnsupportedFileSystemError(PaimonLabError):
    """A warehouse or table location whose URI scheme no installed file system serves."""


class OptionError(PaimonLabError):
    """An unknown or ill-typed table option."""


class SnapshotNotExistError(PaimonLabError):
    """A snapshot that was asked for is not there (never existed, or expired)."""


class TagError(PaimonLabError):
    """A tag operation failed."""


class TagNotExistError(TagError):
    def __init__(self, tag: str):
        super().__init__(f"Tag '{tag}' does not exist")
        self.tag = tag


class CorruptFileError(PaimonLabError):
    """A metadata file (snapshot, schema, manifest) is truncated or not in Paimon's format."""


class CommitError(PaimonLabError):
    """A commit could not be made; nothing of it became visible."""


class CommitConflictError(CommitError):
    """Another commit changed the files this commit depends on."""


class LockTimeoutError(CommitError):
    """The commit lock could not be acquired in time; nothing was committed."""


class UnsafeCommitError(CommitError):
    """A commit refused because, on this store and without a commit lock, a committer on another
    machine could overwrite it (or it could overwrite theirs); nothing was committed."""


class FilterError(PaimonLabError):
    """A filter expression could not be parsed or refers to unknown columns."""


class ArgumentError(PaimonLabError, TypeError, ValueError):
    """An argument of a public call has the wrong type or an impossible value."""


def check_int(name: str, value: object, *, minimum: int | None = None) -> int | None:
    """``value`` as an int (None stays None), or an :class:`ArgumentError` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # (numpy integers too)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        else:
            raise ArgumentError(f"{name} must be an integer, not {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{name} must be at least {minimum}, got {value}")
    return int(value)

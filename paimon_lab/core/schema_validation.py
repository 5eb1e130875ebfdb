"""The table-schema rules Java Paimon checks when a table is created or altered.

Java refuses these schemas in ``SchemaValidation`` (0.9 to 1.4), so a table paimon-lab made with
one of them would be a table Java will not create, alter or, for some, write. Bucket and
default-value rules live beside the schema (:mod:`paimon_lab.core.schema`); the rules here are the
others: option combinations, key column types, reserved column names.
"""

from __future__ import annotations

from paimon_lab.core import types as T
from paimon_lab.errors import OptionError, SchemaError

RESERVED_NAMES = ("_VALUE_COUNT", "_SEQUENCE_NUMBER", "_VALUE_KIND")
KEY_PREFIX = "_KEY_"

# Scan start options, and for each startup mode: the options of which exactly one must be set
# (or the one that must be), and the ones that must not be.
_TIMESTAMP = ("scan.timestamp-millis", "scan.timestamp")
_SNAPSHOT = ("scan.snapshot-id", "scan.tag-name", "scan.watermark")
_INCREMENTAL = ("incremental-between", "incremental-between-timestamp")
_FILE_TIME = "scan.file-creation-time-millis"
_START_OPTIONS = ("scan.timestamp-millis", "scan.timestamp", "scan.snapshot-id", "scan.tag-name",
                  _FILE_TIME) + _INCREMENTAL
_MODES: dict[str, tuple[tuple[str, ...], bool, tuple[str, ...]]] = {   # mode: (one of, exactly one?, conflicts)
    "from-timestamp": (_TIMESTAMP, True, ("scan.snapshot-id", _FILE_TIME, "scan.tag-name") + _INCREMENTAL),
    "from-snapshot": (_SNAPSHOT, True, _TIMESTAMP + (_FILE_TIME,) + _INCREMENTAL),
    "incremental": (_INCREMENTAL, True, ("scan.snapshot-id", "scan.timestamp-millis", _FILE_TIME,
                                         "scan.timestamp", "scan.tag-name")),
    "from-snapshot-full": (("scan.snapshot-id",), False, _TIMESTAMP + (_FILE_TIME, "scan.tag-name") + _INCREMENTAL),
    "from-file-creation-time": ((_FILE_TIME,), False, ("scan.snapshot-id", "scan.timestamp-millis",
                                                       "scan.tag-name") + _INCREMENTAL),
}


def startup_mode(options: dict[str, str]) -> str:
    """The scan startup mode the options select (``scan.mode``; ``default`` resolved as Java does)."""
    mode = options.get("scan.mode", "default")
    if mode == "full":
        return "latest-full"
    if mode != "default":
        return mode
    if any(k in options for k in _TIMESTAMP):
        return "from-timestamp"
    if any(k in options for k in _SNAPSHOT + ("scan.version",)):
        return "from-snapshot"
    if _FILE_TIME in options:
        return "from-file-creation-time"
    if any(k in options for k in _INCREMENTAL):
        return "incremental"
    return "latest-full"


def validate_table_schema(schema) -> None:
    """Refuse what Java's schema validation refuses in ``schema`` (a
    :class:`~paimon_lab.core.schema.TableSchema`, which imports this module)."""
    _validate_names_and_keys(schema)
    formats = {schema.core.get("file.format")}
    if schema.primary_keys:   # their files take the format of their level
        formats.update(schema.core.get("file.format.per.level").values())
    if "avro" in formats:
        for f in schema.fields:
            _check_avro_type(f.name, f.type)
    _validate_startup(schema.options)
    _validate_field_options(schema)
    _validate_engine_options(schema)


def _validate_names_and_keys(schema) -> None:
    for name in schema.field_names:
        if name in RESERVED_NAMES:
            raise SchemaError(f"Column name '{name}' is reserved for Paimon's system columns {list(RESERVED_NAMES)}")
        if name.startswith(KEY_PREFIX):
            raise SchemaError(f"Column name '{name}' must not start with '{KEY_PREFIX}' (Paimon's key columns)")
    nested = (T.ArrayType, T.MapType, T.RowType, T.MultisetType)
    for f in schema.fields_of(schema.primary_keys):
        if isinstance(f.type, nested):
            raise SchemaError(f"Primary key column '{f.name}' has type {f.type}; a key takes no ARRAY, MAP, ROW "
                              "or MULTISET")
    if schema.core.bucket > 0:
        for f in schema.fields_of(schema.bucket_keys):
            if isinstance(f.type, nested):
                raise OptionError(f"'bucket-key' column '{f.name}' has nested type {f.type}")


def _validate_startup(options: dict[str, str]) -> None:
    mode = startup_mode(options)
    if mode in _MODES:
        one_of, exactly_one, conflicts = _MODES[mode]
        present = [k for k in one_of if k in options]
        if exactly_one and len(present) != 1:
            raise OptionError(f"Scan mode '{mode}' needs exactly one of {list(one_of)}; got {present or 'none'}")
        if not present:
            raise OptionError(f"Scan mode '{mode}' needs '{one_of[0]}'")
    else:
        conflicts = _START_OPTIONS
    clash = [k for k in conflicts if k in options]
    if clash:
        raise OptionError(f"{clash} must not be set with scan mode '{mode}'")


def _validate_field_options(schema) -> None:
    """``fields.<names>.<option>`` keys name columns; sequence fields and groups carry no aggregate."""
    names = set(schema.field_names)
    options = schema.options
    for key in options:
        if key.startswith("fields.") and key.count(".") >= 2:
            for name in key.split(".")[1].split(","):
                if name != "default-aggregate-function" and name not in names:
                    raise OptionError(f"Option '{key}': '{name}' is not a column; columns are {schema.field_names}")

    def aggregated(name: str) -> bool:
        return f"fields.{name}.aggregate-function" in options

    sequence = [s.strip() for s in options.get("sequence.field", "").split(",") if s.strip()]
    for name in sequence:
        if sequence.count(name) > 1:
            raise OptionError(f"'sequence.field' names '{name}' more than once")
        if aggregated(name):
            raise OptionError(f"'sequence.field' column '{name}' must not have an aggregate function")
    outside = [k for k in schema.partition_keys if k not in schema.primary_keys]
    if sequence and schema.primary_keys and outside:
        raise OptionError(f"'sequence.field' cannot be used when a key moves between partitions (primary key "
                          f"{list(schema.primary_keys)} lacks partition keys {outside})")
    grouped: dict[str, str] = {}
    for key, value in options.items():
        if not (key.startswith("fields.") and key.endswith(".sequence-group")):
            continue
        orders = key[len("fields."):-len(".sequence-group")].split(",")
        for name in (v.strip() for v in value.split(",")):
            if name in grouped:
                raise OptionError(f"Column '{name}' is in more than one sequence group: '{grouped[name]}' and "
                                  f"'{key}'")
            grouped[name] = key
        bad = [o for o in orders if aggregated(o)]
        if bad:
            raise OptionError(f"Sequence-group sequence column(s) {bad} must not have an aggregate function")


def _validate_engine_options(schema) -> None:
    core, options = schema.core, schema.options
    producer = core.get("changelog-producer")
    engine = core.get("merge-engine")
    dv = core.get("deletion-vectors.enabled")
    levels = core.get("num-levels")
    if schema.primary_keys and (levels if levels is not None else core.get("num-sorted-run.compaction-trigger") + 1) < 2:
        # Java's Levels refuses to write such a table ("Number of levels must be at least 2")
        raise OptionError(f"'num-levels' must be at least 2, got {levels}" if levels is not None else
                          "'num-sorted-run.compaction-trigger' must be at least 1 when 'num-levels' is not set "
                          "(the levels are that trigger + 1, at least 2)")
    if not schema.primary_keys:
        if producer != "none":
            raise OptionError(f"'changelog-producer' = '{producer}' needs a primary key")
        if core.get("streaming-read-overwrite"):
            raise OptionError("'streaming-read-overwrite' needs a primary key")
        if core.bucket == -1 and "full-compaction.delta-commits" in options:
            raise OptionError("An append table with 'bucket' = -1 takes no 'full-compaction.delta-commits'")
    if core.get("streaming-read-overwrite") and producer in ("lookup", "full-compaction"):
        raise OptionError(f"'streaming-read-overwrite' would read duplicate changes with 'changelog-producer' = "
                          f"'{producer}'")
    if engine == "first-row" and producer not in ("none", "lookup"):
        raise OptionError(f"The first-row merge engine takes 'changelog-producer' 'none' or 'lookup', not '{producer}'")
    if dv and producer not in ("none", "input", "lookup"):
        raise OptionError(f"Deletion vectors take 'changelog-producer' 'none', 'input' or 'lookup', not '{producer}'")
    if dv and engine == "first-row":
        raise OptionError("The first-row merge engine takes no deletion vectors (it never deletes older rows)")
    if core.bucket == -1 and "bucket-key" in options:
        raise OptionError("'bucket-key' needs a bucket count; 'bucket' = -1 takes none")
    if "partition.expiration-time" in options and not schema.partition_keys:
        raise OptionError("'partition.expiration-time' needs a partitioned table")
    for what in ("snapshot", "changelog"):
        low, high = options.get(f"{what}.num-retained.min"), options.get(f"{what}.num-retained.max")
        if low is not None and int(low) < 1:
            raise OptionError(f"'{what}.num-retained.min' must be at least 1, got {low}")
        # as Java's SchemaValidation: min <= max, the snapshot options first (the changelog
        # options fall back to them)
        low_key = f"{what}.num-retained.min" if low is not None else "snapshot.num-retained.min"
        high_key = f"{what}.num-retained.max" if high is not None else "snapshot.num-retained.max"
        low = int(low) if low is not None else core.get("snapshot.num-retained.min")
        high = int(high) if high is not None else core.get("snapshot.num-retained.max")
        if low > high:
            raise OptionError(f"'{what}.num-retained.min' ({low}){_via(low_key, what)} must not be greater than "
                              f"'{what}.num-retained.max' ({high}){_via(high_key, what)}")


def _via(key: str, what: str) -> str:
    """Where a retention bound came from when it is not the option named."""
    return "" if key.startswith(what) else f" (taken from '{key}')"


def _check_avro_type(column: str, t) -> None:
    """Java's Avro format stores timestamps to the microsecond and times to the millisecond."""
    limit = {"TIMESTAMP": 6, "TIMESTAMP_LTZ": 6, "TIME": 3}.get(t.root)
    if limit is not None and t.precision > limit:
        raise SchemaError(f"Column '{column}': {t} does not fit the Avro file format (at most {t.root}({limit}); "
                          "use 'file.format' parquet or orc)")
    for inner in (getattr(t, a, None) for a in ("element", "key", "value")):
        if isinstance(inner, T.DataType):
            _check_avro_type(column, inner)
    for f in getattr(t, "fields", ()) or ():
        _check_avro_type(column, f.type)

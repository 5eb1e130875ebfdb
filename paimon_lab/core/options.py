"""Table options (Paimon's CoreOptions): the registry of every key, typed parsing and validation.

``option_registry.json`` (generated from Java Paimon by ``scripts/gen_option_registry.py``) lists
every option Java knows, with paimon-lab's status for it: ``implemented``, ``no-effect`` (accepted,
with a reason why nothing depends on it) or ``refused`` (setting it raises an :class:`OptionError`
naming the reason). Options are stored as strings in the schema file; :class:`CoreOptions` gives
typed access and :func:`validate_options` checks keys and values.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
import zoneinfo
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from paimon_lab.errors import OptionError

_MEM_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
              "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
              "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
_DUR_UNITS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
              "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
              "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
              "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
              "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


def parse_memory(text: str) -> int:
    """'128 mb' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _MEM_UNITS:
        raise ValueError(f"'{text}' is not a memory size such as '128 mb'")
    return int(m.group(1)) * _MEM_UNITS[m.group(2).lower()]


def parse_duration(text: str) -> int:
    """'1 h' -> milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _DUR_UNITS:
        raise ValueError(f"'{text}' is not a duration such as '1 h' or '30 min'")
    return int(m.group(1)) * _DUR_UNITS[m.group(2).lower()]


def option_seconds(options: Mapping[str, str], key: str, default: float) -> float:
    """A duration option (e.g. a lock's 'lock-acquire-timeout') in seconds; OptionError if malformed."""
    if key not in options:
        return default
    try:
        return parse_duration(str(options[key])) / 1000.0
    except ValueError as e:
        raise OptionError(f"Option '{key}': {e}") from None


def _parse_bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low not in ("true", "false"):
        raise ValueError(f"'{text}' is not a boolean (true/false)")
    return low == "true"


def _parse_int(text: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError(f"'{text}' is not an integer") from None


def _non_negative_int(text: str) -> int:
    value = _parse_int(text)
    if value < 0:
        raise ValueError(f"'{text}' is negative; it must be 0 or more")
    return value


def _enum(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = str(text).strip().lower()
        if low not in choices:
            raise ValueError(f"'{text}' is not one of {', '.join(choices)}")
        return low
    return parse


def _level_map(parse_value: Callable[[str], str]) -> Callable[[str], dict[int, str]]:
    """A per-level map such as '0:avro,3:parquet' (Java's map option syntax) as {level: value}."""
    def parse(text: str) -> dict[int, str]:
        out: dict[int, str] = {}
        for item in (i.strip() for i in str(text).split(",")):
            if not item:
                continue
            level, colon, value = item.partition(":")
            if not colon or not re.fullmatch(r"\d+", level.strip()):
                raise ValueError(f"'{text}' is not a map of levels such as '0:avro,3:parquet' ('{item}')")
            out[int(level)] = parse_value(value)
        return out
    return parse


def _mark_done_actions(text: str) -> tuple[str, ...]:
    """'partition.mark-done-action': a comma list of Java 0.9's actions."""
    actions = tuple(a.strip().lower() for a in str(text).split(",") if a.strip())
    for a in actions:
        if a not in ("success-file", "done-partition", "mark-event"):
            raise ValueError(f"'{a}' is not a mark-done action (success-file, done-partition, mark-event)")
    if not actions:
        raise ValueError("give at least one action (success-file, done-partition, mark-event)")
    return actions


def _positive_int(text: str) -> int:
    value = _parse_int(text)
    if value <= 0:
        raise ValueError(f"'{text}' must be a positive integer")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"'{text}' is not between 0 and 1")
    return value


def _parquet_codec(text: str) -> str:
    low = str(text).strip().lower()
    if low not in ("uncompressed", "none", "snappy", "gzip", "lzo", "brotli", "lz4", "lz4_raw", "zstd"):
        raise ValueError(f"'{text}' is not a Parquet codec (uncompressed, snappy, gzip, lzo, brotli, lz4_raw, zstd)")
    return {"lz4_raw": "lz4"}.get(low, low)


def _parquet_writer_version(text: str) -> str:
    low = str(text).strip().lower()
    version = {"v1": "v1", "parquet_1_0": "v1", "v2": "v2", "parquet_2_0": "v2"}.get(low)
    if version is None:
        raise ValueError(f"'{text}' is not a Parquet writer version (v1, v2)")
    return version


def _padding(text: str) -> str:
    parts = [p.strip().lower() for p in str(text).split(",") if p.strip()]
    bad = [p for p in parts if p not in ("row-kind-flag", "second-to-micro", "millis-to-micro")]
    if bad or not parts:
        raise ValueError(f"'{text}' is not a list of row-kind-flag, second-to-micro, millis-to-micro")
    return ",".join(parts)


def _stats_mode(text: str) -> str:
    low = str(text).strip().lower()
    if low in ("none", "counts", "full") or re.fullmatch(r"truncate\(\d+\)", low):
        return low
    raise ValueError(f"'{text}' is not a stats mode (none, counts, full, truncate(N))")


def _radical_only(text: str) -> str:
    low = str(text).strip().lower()
    if low == "gentle":
        raise ValueError("'gentle' lookup compaction is not implemented in paimon-lab; use 'radical'")
    return _enum("radical")(low)


def _time_zone(text: str) -> str:
    """A zone id such as 'UTC', 'Asia/Shanghai' or 'GMT-08:00'."""
    zone_of(text)
    return str(text).strip()


def zone_of(text: str) -> dt.tzinfo:
    """The tzinfo of a Java zone id."""
    name = str(text).strip()
    m = re.fullmatch(r"(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", name)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0)))
    if name in ("Z", "GMT", "UT"):
        return dt.timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"'{text}' is not a time zone id such as 'UTC', 'Asia/Shanghai' or 'GMT-08:00'") from None


_DATE_LETTERS = {"yyyy": r"(?P<year>\d{4})", "uuuu": r"(?P<year>\d{4})", "MM": r"(?P<month>\d{2})",
                 "dd": r"(?P<day>\d{2})", "HH": r"(?P<hour>\d{2})", "mm": r"(?P<minute>\d{2})",
                 "ss": r"(?P<second>\d{2})", "SSS": r"(?P<milli>\d{3})"}


def date_pattern_regex(pattern: str) -> "re.Pattern":
    """A Java ``DateTimeFormatter`` pattern (yyyy MM dd HH mm ss SSS, quoted literals, punctuation)
    as a regular expression with named groups."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ValueError(f"'{pattern}' has an unclosed quote")
            out.append(re.escape(pattern[i + 1:end] or "'"))
            i = end + 1
            continue
        if ch.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            letters = pattern[i:j]
            if letters not in _DATE_LETTERS:
                raise ValueError(f"'{pattern}': '{letters}' is not supported (use yyyy, MM, dd, HH, mm, ss, SSS)")
            out.append(_DATE_LETTERS[letters])
            i = j
            continue
        out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out))
    except re.error:
        raise ValueError(f"'{pattern}' repeats a field") from None


def _date_pattern(text: str) -> str:
    date_pattern_regex(str(text))
    return str(text)


# Flink's setting of the same name; paimon-lab takes it as a table option (and as a SQL session SET).
TYPE_LENGTH_ENFORCER = "table.exec.sink.type-length-enforcer"


@dataclass(frozen=True)
class Option:
    key: str
    default: Any
    parse: Callable[[str], Any] = str
    description: str = ""


_FORMATS = _enum("parquet", "orc", "avro")
_COMPRESSIONS = _enum("zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed", "lzo")
_OPTIONS: list[Option] = [
    Option("bucket", -1, _parse_int, "Number of buckets; -1 is dynamic (PK) or bucket-unaware (append), -2 postpone (PK)."),
    Option("bucket-function.type", "default", _enum("default", "mod", "hive")),
    Option("bucket-key", None, str, "Columns whose hash picks the bucket."),
    Option("postpone.default-bucket-num", None, _parse_int,
           "Bucket count a postpone compaction gives a partition that has no real buckets yet."),
    Option("postpone.target-row-num-per-bucket", None, _parse_int,
           "Without a default bucket count: postponed rows per bucket of a new partition."),
    Option("postpone.target-size-per-bucket", 1 << 30, parse_memory,
           "Without a default bucket count or target rows: postponed bytes per bucket of a new partition."),
    Option("file.format", "parquet", _FORMATS, "Data file format."),
    Option("file.compression", "zstd", _COMPRESSIONS, "Data file compression."),
    Option("file.compression.zstd-level", 1, _parse_int),
    Option("file.format.per.level", {}, _level_map(_FORMATS),
           "Primary-key tables: the format of files written at a level, e.g. '0:avro,3:parquet' (others: 'file.format')."),
    Option("file.compression.per.level", {}, _level_map(_COMPRESSIONS),
           "Primary-key tables: the compression of files written at a level, e.g. '0:lz4,1:zstd'."),
    Option("parquet.enable.dictionary", None, _parse_bool,
           "Dictionary-encode every Parquet column (true) or none (false); unset: per column, "
           "no dictionary for columns whose values are almost all distinct (those are PLAIN)."),
    Option("parquet.delta-encoding", False, _parse_bool,
           "paimon-lab only: DELTA_BINARY_PACKED instead of PLAIN for integer, date and timestamp "
           "columns without a dictionary (smaller files, faster reads). NOT readable by Java Paimon "
           "<= 1.0 (Flink/Spark jobs fail with 'Unsupported encoding: DELTA_BINARY_PACKED'); pyarrow, "
           "pypaimon and paimon-rust read it. Leave it off for tables Java reads."),
    Option("parquet.compression", None, _parquet_codec),
    Option("parquet.compression.codec.zstd.level", None, _parse_int),
    Option("parquet.block.size", None, _positive_int),
    Option("parquet.page.size", None, _positive_int),
    Option("parquet.dictionary.page.size", None, _positive_int),
    Option("parquet.writer.version", "v1", _parquet_writer_version),
    Option("orc.stripe.size", None, _positive_int),
    Option("orc.compress.size", None, _positive_int),
    Option("orc.row.index.stride", None, _positive_int),
    Option("orc.bloom.filter.columns", None, str),
    Option("orc.bloom.filter.fpp", None, _fraction),
    Option("orc.dictionary.key.threshold", 0.8, _fraction),
    Option("target-file-size", None, parse_memory, "Roll data files at this size."),
    Option("partition.default-name", "__DEFAULT_PARTITION__", str),
    Option("partition.legacy-name", True, _parse_bool),
    Option("metastore.partitioned-table", False, _parse_bool,
           "The Hive catalog registers the table's partitions in the metastore."),
    Option("manifest.format", "avro", _enum("avro")),
    Option("manifest.compression", "zstd", _enum("zstd", "snappy", "deflate", "null", "none")),
    Option("manifest.target-file-size", 8 << 20, parse_memory),
    Option("manifest.merge-min-count", 30, _parse_int),
    Option("manifest.full-compaction-threshold-size", 16 << 20, parse_memory),
    Option("metadata.stats-mode", "truncate(16)", _stats_mode),
    Option("commit.user-prefix", None, str),
    Option("commit.force-compact", False, _parse_bool,
           "Every commit waits for the compactions its writes started (overrides 'lookup-wait' = false)."),
    Option("commit.max-retries", 10, _non_negative_int),
    Option("commit.min-retry-wait", 10, parse_duration,
           "Wait after the first lost race for a snapshot id; doubled after each (with jitter)."),
    Option("commit.max-retry-wait", 10_000, parse_duration, "The longest wait between commit retries."),
    Option("snapshot.num-retained.min", 10, _parse_int),
    Option("snapshot.num-retained.max", 2147483647, _parse_int),
    Option("snapshot.time-retained", 3_600_000, parse_duration),
    Option("snapshot.expire.limit", 50, _parse_int),
    Option("scan.snapshot-id", None, _parse_int),
    Option("scan.tag-name", None, str),
    Option("scan.version", None, str),
    Option("scan.timestamp-millis", None, _parse_int),
    Option("scan.timestamp", None, str),
    Option("scan.watermark", None, _parse_int),
    Option("scan.file-creation-time-millis", None, _parse_int),
    Option("scan.mode", "default", _enum("default", "latest-full", "full", "latest", "compacted-full",
                                         "from-timestamp", "from-snapshot", "from-snapshot-full",
                                         "incremental")),
    Option("incremental-between", None, str),
    Option("incremental-between-timestamp", None, str),
    Option("incremental-between-scan-mode", "auto", _enum("auto", "delta", "changelog", "diff")),
    Option("write-only", False, _parse_bool),
    Option("write-buffer-size", 256 << 20, parse_memory),
    Option("write-buffer-spillable", True, _parse_bool),
    Option("write-buffer-spill.max-disk-size", None, parse_memory),
    Option("spill-compression", "zstd", _enum("zstd", "lz4", "none")),
    Option("spill-compression.zstd-level", 1, _parse_int),
    Option("page-size", 64 << 10, parse_memory),
    Option("read.batch-size", 1024, _parse_int),
    Option("num-levels", None, _parse_int),
    Option("num-sorted-run.compaction-trigger", 5, _parse_int),
    Option("num-sorted-run.stop-trigger", None, _parse_int),
    Option("compaction.max-size-amplification-percent", 200, _parse_int),
    Option("compaction.size-ratio", 1, _parse_int),
    Option("compaction.min.file-num", 5, _parse_int),
    Option("compaction.max.file-num", 50, _parse_int),
    Option("compaction.small-file-ratio", 0.7, float,
           "Files under target-file-size times this are rewritten with their neighbours in a compaction; "
           "larger files that overlap nothing are moved up a level by metadata only."),
    Option("full-compaction.delta-commits", None, _parse_int),
    Option("merge-engine", "deduplicate", _enum("deduplicate", "partial-update", "aggregation", "first-row")),
    Option("changelog-producer", "none", _enum("none", "input", "lookup", "full-compaction")),
    Option("changelog-producer.row-deduplicate", False, _parse_bool),
    Option("sequence.field", None, str),
    Option("rowkind.field", None, str, "A column holding each row's kind ('+I', '-U', '+U', '-D')."),
    Option("sequence.auto-padding", None, _padding),
    Option("first-row.ignore-delete", False, _parse_bool),
    Option("partial-update.ignore-delete", False, _parse_bool),
    Option("partial-update.remove-record-on-delete", False, _parse_bool),
    Option("aggregation.remove-record-on-delete", False, _parse_bool),
    Option("ignore-delete", False, _parse_bool),
    Option("deletion-vectors.bitmap64", False, _parse_bool),
    Option("deletion-vectors.enabled", False, _parse_bool),
    Option("dynamic-bucket.target-row-num", 2_000_000, _parse_int),
    Option("dynamic-bucket.initial-buckets", None, _parse_int),
    Option("dynamic-partition-overwrite", True, _parse_bool),
    Option(TYPE_LENGTH_ENFORCER, "error", _enum("error", "trim_pad", "ignore"),
           "CHAR(n)/VARCHAR(n)/BINARY(n)/VARBINARY(n) values longer than n: refuse the write (error, "
           "as Spark SQL), trim them and pad CHAR/BINARY to n (trim_pad, as Flink's enforcer), or store as given."),
    Option("data-file.thin-mode", False, _parse_bool),
    Option("data-file.prefix", "data-", str),
    Option("changelog-file.prefix", "changelog-", str),
    Option("file-index.in-manifest-threshold", 500, parse_memory),
    Option("consumer-id", None, str),
    Option("consumer.expiration-time", None, parse_duration),
    Option("streaming-read-overwrite", False, _parse_bool),
    Option("path", None, str),
    Option("field-delimiter", ",", str),
    Option("file-index.read.enabled", True, _parse_bool),
    Option("type", "table", str),
    Option("owner", None, str),
    Option("comment", None, str),
    Option("primary-key", None, str),
    Option("partition", None, str),
    Option("connector", None, str),
    Option("rows-per-second", None, _parse_int),
    Option("number-of-rows", None, _parse_int),
    # aggfi (s6)
    Option("lookup-wait", True, _parse_bool,
           "Tables that lift level 0 at commit (lookup changelog, deletion vectors, first-row): true "
           "lifts this commit's level-0 files before committing; false (Java's asynchronous lookup "
           "compaction) commits them in level 0 and lifts them with the next commit."),
    Option("changelog-producer.lookup-wait", True, _parse_bool, "Older name of 'lookup-wait'."),
    Option("record-level.expire-time", None, parse_duration,
           "Primary-key tables: compactions drop records whose time field is older than this."),
    Option("record-level.time-field", None, str, "The time column of 'record-level.expire-time'."),
    Option("record-level.time-field-type", "seconds-int", _enum("seconds-int", "millis-long"),
           "Java 0.9: the time column is INT seconds or BIGINT milliseconds (unset: by its type)."),
    Option("force-lookup", False, _parse_bool,
           "Compact as tables that look keys up do (lift level 0 at every commit, fold older rows in), "
           "without a lookup changelog."),
    Option("lookup-compact", "radical", _radical_only,
           "Only 'radical' (lift level 0 at every commit); Java's 'gentle' mode is not implemented."),
    Option("lookup-compact.max-interval", None, _parse_int,
           "Used by Java's 'gentle' lookup-compact only, which paimon-lab refuses: no effect."),
    Option("lookup.cache-max-disk-size", None, parse_memory,
           "Bound of the local lookup files (sorted keys of each data file) on this machine's disk; least "
           "recently used files are evicted beyond it (default unlimited)."),
    Option("lookup.cache-file-retention", 3_600_000, parse_duration,
           "Local lookup files unused for longer than this are deleted (rebuilt from the data file when needed)."),
    Option("lookup.cache-max-memory-size", 256 << 20, parse_memory,
           "Bound of the lookup files a process keeps open (memory-mapped) between lookups."),
    *(Option(key, None, parse, "No effect by design: a knob of Java's local lookup cache files; "
             "paimon-lab's lookup files are sorted Arrow files and this knob has no counterpart there.")
      for key, parse in (("lookup.local-file-type", _enum("hash", "sort")), ("lookup.hash-load-factor", float),
                         ("lookup.cache-spill-compression", str),
                         ("lookup.cache.bloom.filter.enabled", _parse_bool), ("lookup.cache.bloom.filter.fpp", float),
                         ("lookup.cache.high-priority-pool-ratio", float), ("lookup.cache-rows", _parse_int),
                         ("lookup.merge-buffer-size", parse_memory), ("lookup.merge-records-threshold", _parse_int),
                         ("lookup.remote-file.enabled", _parse_bool), ("lookup.remote-file.level-threshold", _parse_int))),
    *(Option(key, None, parse, "No effect by design: an option of Flink's lookup join, which paimon-lab "
             "does not have.")
      for key, parse in (("lookup.async", _parse_bool), ("lookup.async-thread-number", _parse_int),
                         ("lookup.cache", _enum("auto", "full", "memory")), ("lookup.bootstrap-parallelism", _parse_int),
                         ("lookup.dynamic-partition", str), ("lookup.dynamic-partition.refresh-interval", parse_duration),
                         ("lookup.refresh.async", _parse_bool), ("lookup.refresh.async.pending-snapshot-count", _parse_int),
                         ("lookup.continuous.discovery-interval", parse_duration))),
    # lifecycle (s6)
    Option("tag.automatic-creation", "none", _enum("none", "process-time", "watermark", "batch"),
           "Create tags on commit: by the snapshot's commit time (process-time), its watermark, or one "
           "per batch write (batch)."),
    Option("tag.creation-period", "daily", _enum("daily", "hourly", "two-hours"), "How often to auto-create a tag."),
    Option("tag.creation-period-duration", None, parse_duration,
           "A custom period for auto-created tags (named yyyyMMddHHmm); overrides 'tag.creation-period'."),
    Option("tag.creation-delay", 0, parse_duration, "How long after a period ends its tag is created."),
    Option("tag.period-formatter", "with_dashes", _enum("with_dashes", "without_dashes", "without_dashes_and_spaces"),
           "Names of auto-created tags: 'yyyy-MM-dd HH', 'yyyyMMdd HH' or 'yyyyMMddHH'."),
    Option("tag.num-retained-max", None, _parse_int, "Keep at most this many auto-created tags."),
    Option("tag.default-time-retained", None, parse_duration,
           "How long new tags (auto-created or by procedure) live before the commit-time expiration deletes them."),
    Option("tag.time-expire-enabled", True, _parse_bool, "Delete tags past their time retained on commit."),
    Option("tag.automatic-completion", False, _parse_bool, "Create the missing auto tags of skipped periods."),
    Option("tag.batch.customized-name", None, str, "The tag name of 'tag.automatic-creation' = batch."),
    Option("sink.process-time-zone", None, _time_zone,
           "Time zone of commit times for process-time tags and batch tag names (default: the local zone)."),
    Option("sink.watermark-time-zone", "UTC", _time_zone, "Time zone of watermarks for watermark tags."),
    Option("partition.end-input-to-done", False, _parse_bool,
           "Mark the partitions a batch write wrote done after its commit ('partition.mark-done-action')."),
    Option("partition.mark-done-action", ("success-file",), _mark_done_actions,
           "What marking a partition done does: 'success-file' writes its _SUCCESS file; 'done-partition' "
           "and 'mark-event' (Hive catalog) register '<last value>.done' / a LOAD_DONE event in the metastore."),
    Option("partition.expiration-time", None, parse_duration,
           "Drop a partition once it is older than this (on commit and by CALL sys.expire_partitions)."),
    Option("partition.expiration-check-interval", 3_600_000, parse_duration,
           "How often a committer checks for expired partitions."),
    Option("partition.expiration-strategy", "values-time", _enum("values-time", "update-time"),
           "Partition age from its values (values-time) or from its newest file (update-time)."),
    Option("partition.expiration-max-num", 100, _parse_int, "Expire at most this many partitions at a time."),
    Option("partition.expiration-batch-size", None, _parse_int, "Drop expired partitions in commits of this many."),
    Option("partition.timestamp-formatter", None, _date_pattern,
           "Java DateTimeFormatter pattern of partition times (default 'yyyy-MM-dd[ HH:mm:ss]')."),
    Option("partition.timestamp-pattern", None, str, "How partition values form a time, e.g. '$dt $hour:00:00'."),
    Option("end-input.check-partition-expire", False, _parse_bool,
           "Check partition expiration on every batch commit, whatever the check interval."),
    Option("changelog.num-retained.min", None, _parse_int,
           "Minimum number of changelogs to retain (default: 'snapshot.num-retained.min')."),
    Option("changelog.num-retained.max", None, _parse_int,
           "Maximum number of changelogs to retain (default: 'snapshot.num-retained.max')."),
    Option("changelog.time-retained", None, parse_duration,
           "How long changelogs are retained (default: 'snapshot.time-retained'); beyond the snapshot "
           "retention, expired snapshots live on as changelog/changelog-N."),
]
OPTIONS: dict[str, Option] = {o.key: o for o in _OPTIONS}


def _float(text: str) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        raise ValueError(f"'{text}' is not a number") from None


_BY_TYPE: dict[str, Callable[[str], Any]] = {
    "boolean": _parse_bool, "int": _parse_int, "long": _parse_int, "double": _float, "float": _float,
    "memory": parse_memory, "duration": parse_duration}

IMPLEMENTED, NO_EFFECT, REFUSED = "implemented", "no-effect", "refused"
REGISTRY_FILE = Path(__file__).with_name("option_registry.json")


@dataclass(frozen=True)
class RegistryEntry:
    """One row of the option registry: a key (or, for patterns, a regex) and paimon-lab's status."""
    key: str
    source: str
    type: str
    default: str | None
    since: str
    status: str
    reason: str
    reads: bool
    description: str
    until: str | None = None
    pattern: re.Pattern | None = None

    def refusal(self, key: str) -> OptionError:
        return OptionError(f"Option '{key}' is not supported by paimon-lab: {self.reason}")


def _load_registry() -> tuple[dict[str, RegistryEntry], list[RegistryEntry]]:
    data = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    keys = [f for f in RegistryEntry.__dataclass_fields__ if f != "pattern"]
    options = {o["key"]: RegistryEntry(**{k: o.get(k) for k in keys}) for o in data["options"]}
    patterns = [RegistryEntry(**{k: p.get(k) for k in keys}, pattern=re.compile(p["pattern"]))
                for p in data["patterns"]]
    return options, patterns


REGISTRY, PATTERNS = _load_registry()


def registry_entry(key: str) -> RegistryEntry | None:
    """The registry row for ``key``: its own row, else the first per-field/per-index pattern it matches."""
    entry = REGISTRY.get(key)
    if entry is None:
        entry = next((p for p in PATTERNS if p.pattern.fullmatch(key)), None)
    return entry


def validate_options(options: Mapping[str, str]) -> dict[str, str]:
    """Check every key is an option paimon-lab implements (or accepts with no effect by design) and
    every value parses; return them as strings. Unknown and refused keys raise an OptionError."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if value is None:
            raise OptionError(f"Option '{key}' has no value")
        if not isinstance(value, (str, bool, int, float)):
            raise OptionError(f"Option '{key}' takes a string (a list as 'a,b'), a number or a bool, "
                              f"not {type(value).__name__} {value!r}")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        entry = registry_entry(key)
        if entry is None:
            near = difflib.get_close_matches(key, REGISTRY, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            raise OptionError(f"Unknown table option '{key}'{hint}")
        if entry.status == REFUSED:
            raise entry.refusal(key)
        parse = OPTIONS[key].parse if key in OPTIONS else _BY_TYPE.get(entry.type or "", str)
        try:
            parse(text)
        except ValueError as e:
            raise OptionError(f"Option '{key}': {e}") from None
        out[key] = text
    return out


def check_readable(options: Mapping[str, str]) -> None:
    """Refuse to read a table (e.g. one Java wrote) carrying a refused option that changes what a
    read returns; refused options that do not (a tag-creation schedule, say) are let through."""
    for key in options:
        entry = registry_entry(key)
        if entry is not None and entry.status == REFUSED and not entry.reads:
            raise entry.refusal(key)


class CoreOptions:
    """Typed, defaulted view of a table's options."""

    def __init__(self, options: Mapping[str, str], primary_keys: bool = False):
        self.raw = dict(options)
        self._pk = primary_keys

    def get(self, key: str) -> Any:
        opt = OPTIONS[key]
        if key in self.raw:
            try:
                return opt.parse(self.raw[key])
            except ValueError as e:
                raise OptionError(f"Option '{key}': {e}") from None
        return opt.default

    def new_commit_user(self) -> str:
        """A fresh commit user: a UUID, after 'commit.user-prefix' and '_' when that is set (as Java)."""
        prefix = self.get("commit.user-prefix")
        return f"{prefix}_{uuid.uuid4()}" if prefix is not None else str(uuid.uuid4())

    @property
    def bucket(self) -> int:
        return self.get("bucket")

    @property
    def file_format(self) -> str:
        return self.get("file.format")

    def format_for_level(self, level: int | None) -> str:
        """The format of a primary-key file written at ``level`` (None: an append table's file)."""
        return self.get("file.format.per.level").get(level, self.file_format) if level is not None else self.file_format

    def compression_for_level(self, level: int | None) -> str:
        """The compression of a primary-key file written at ``level`` (None: an append table's file)."""
        default = self.get("file.compression")
        return self.get("file.compression.per.level").get(level, default) if level is not None else default

    @property
    def target_file_size(self) -> int:
        size = self.get("target-file-size")
        if size is None:
            size = (128 if self._pk else 256) << 20
        return size

    @property
    def partition_default_name(self) -> str:
        return self.get("partition.default-name")

    @property
    def manifest_compression(self) -> str:
        return self.get("manifest.compression")

    @property
    def stats_mode(self) -> str:
        return self.get("metadata.stats-mode")

    def field_stats_mode(self, name: str) -> str:
        key = f"fields.{name}.stats-mode"
        return _stats_mode(self.raw[key]) if key in self.raw else self.stats_mode

    @property
    def bucket_key(self) -> list[str]:
        text = self.get("bucket-key")
        return [k.strip() for k in text.split(",") if k.strip()] if text else []

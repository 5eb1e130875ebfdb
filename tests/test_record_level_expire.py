"""'record-level.expire-time': compactions of a primary-key table drop the records whose time
field is older than now minus the expire time (Java's RecordLevelExpire); reads do not filter."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_lab.errors import DataValidationError, OptionError
from paimon_lab.utils.clock import use_clock

NOW = 1_700_000_000   # epoch seconds the tests' clock reads
HOUR = 3600


def _table(lab, time_type=pa.int32(), name="db.t", **options):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", time_type)])
    return lab.create_table(name, schema, primary_keys=["id"], options={
        "bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "ts", **options})


def _rows(ids, times, time_type=pa.int32()):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids], "ts": pa.array(times, time_type)})


def _ids(t):
    return sorted(t.to_arrow()["id"].to_pylist())


def test_compaction_drops_expired_records_reads_do_not(lab):
    t = _table(lab)
    with use_clock(NOW * 1000):
        t.write(_rows([1, 2, 3], [NOW - 2 * HOUR, NOW - HOUR, NOW]))   # 1 is expired, 2 just not
        assert _ids(t) == [1, 2, 3]      # no compaction yet: reads see every record
        t.write(_rows([4], [NOW]))
        t.compact(full=True)
        assert _ids(t) == [2, 3, 4]
    with use_clock((NOW + 30 * 60) * 1000):
        t.write(_rows([5], [NOW]))
        t.compact(full=True)
        assert _ids(t) == [3, 4, 5]


def test_an_expired_update_does_not_resurrect_the_older_row(lab):
    # the newer (expired) row is dropped before the merge: the older value comes back, as in Java
    t = _table(lab, **{"merge-engine": "deduplicate"})
    with use_clock(NOW * 1000):
        t.write(_rows([1], [NOW]))
        t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["old-time"], "ts": pa.array([NOW - 5 * HOUR], pa.int32())}))
        assert t.to_arrow()["v"].to_pylist() == ["old-time"]
        t.compact(full=True)
        assert t.to_arrow()["v"].to_pylist() == ["v1"]


@pytest.mark.parametrize("time_type, scale, options", [
    (pa.int64(), 1000, {}),                                              # BIGINT milliseconds (>= 10^12)
    (pa.int64(), 1, {}),                                                 # BIGINT seconds
    (pa.int64(), 1000, {"record-level.time-field-type": "millis-long"}),
    (pa.timestamp("us"), 1_000_000, {}),
    (pa.timestamp("ms", "UTC"), 1000, {}),
])
def test_time_field_types(lab, time_type, scale, options):
    t = _table(lab, time_type, **options)
    with use_clock(NOW * 1000):
        t.write(_rows([1, 2], [(NOW - 2 * HOUR) * scale, NOW * scale], time_type))
        t.write(_rows([3], [NOW * scale], time_type))
        t.compact(full=True)
        assert _ids(t) == [2, 3]


def test_lookup_compaction_expires_too(lab):
    t = _table(lab, **{"changelog-producer": "lookup"})
    with use_clock(NOW * 1000):
        t.write(_rows([1, 2], [NOW - 2 * HOUR, NOW]))
        t.write(_rows([3], [NOW]))
        t.compact(full=True)
        assert _ids(t) == [2, 3]


def test_settings_java_refuses(lab):
    with pytest.raises(OptionError, match="record-level.time-field"):
        lab.create_table("db.a", pa.schema([("id", pa.int64()), ("ts", pa.int32())]), primary_keys=["id"],
                         options={"record-level.expire-time": "1 h"}).write(_rows([1], [NOW]).select(["id", "ts"]))
    t = _table(lab, pa.int64(), name="db.b", **{"record-level.time-field-type": "seconds-int"})
    with pytest.raises(OptionError, match="seconds-int.*INT"):
        t.write(_rows([1], [NOW], pa.int64()))
    t = _table(lab, pa.string(), name="db.c")
    with pytest.raises(OptionError, match="INT, BIGINT, TIMESTAMP"):
        t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"], "ts": ["now"]}))
    t = _table(lab, name="db.d")
    t.write(_rows([1], [None]))
    t.write(_rows([2], [NOW]))
    with pytest.raises(DataValidationError, match="NULL"):
        t.compact(full=True)

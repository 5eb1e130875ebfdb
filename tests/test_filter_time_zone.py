"""Timestamp strings in Python ``filter=`` strings: UTC for a TIMESTAMP_LTZ column unless they name
an offset (the Python API has no session zone); an offset on a zone-less TIMESTAMP is refused."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_lab import Catalog
from paimon_lab.errors import FilterError

UTC = dt.timezone.utc


@pytest.fixture
def table(tmp_path):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int32()), ("ltz", pa.timestamp("ms", tz="UTC")),
                                            ("ts", pa.timestamp("ms")), ("l9", pa.timestamp("ns", tz="UTC"))]))
    v = dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    t.write(pa.table({"id": pa.array([1, 2], pa.int32()), "ltz": [v, v + dt.timedelta(hours=1)],
                      "ts": [v.replace(tzinfo=None), v.replace(tzinfo=None) + dt.timedelta(hours=1)],
                      "l9": [v, v + dt.timedelta(hours=1)]}))
    return t


@pytest.mark.parametrize("text, ids", [
    ("ltz = '2024-01-01 10:00:00'", [1]),                  # no offset: UTC
    ("ltz = '2024-01-01 10:00:00Z'", [1]),
    ("ltz = '2024-01-01 18:00:00+08:00'", [1]),            # the same instant, named in +08:00
    ("ltz > '2024-01-01T05:30:00-05:00'", [2]),
    ("ts = '2024-01-01 11:00:00'", [2]),                    # a zone-less column compares wall clocks
    ("l9 = '2024-01-01 19:00:00.0000000+08:00'", [2]),     # TIMESTAMP_LTZ(9), kept as INT96 in Parquet
    ("l9 < '2024-01-01 10:30:00.000000001'", [1]),
])
def test_ltz_filter_literals(table, text, ids):
    assert table.to_arrow(filter=text).column("id").to_pylist() == ids


def test_an_offset_on_a_zone_less_timestamp_is_refused(table):
    with pytest.raises(FilterError, match="column 'ts' is a TIMESTAMP without time zone"):
        table.to_arrow(filter="ts = '2024-01-01 10:00:00+08:00'")

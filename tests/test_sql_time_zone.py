"""'table.local-time-zone' and TIMESTAMP precision in SQL, as Flink has them."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("duckdb")

from paimon_lab.sql import Session, SqlError

UTC = dt.timezone.utc


@pytest.fixture
def s(tmp_path):
    session = Session()
    session.run(f"CREATE CATALOG c WITH ('type'='paimon', 'warehouse'='file:{tmp_path}'); USE CATALOG c")
    session.run("CREATE DATABASE db; USE db")
    session.run("CREATE TABLE t (id INT, ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3), ts9 TIMESTAMP(9))")
    yield session
    session.close()


def test_ltz_values_are_shown_in_the_session_zone(s):
    s.run("SET 'table.local-time-zone' = 'UTC'")
    s.run("INSERT INTO t (id, ltz) VALUES (1, TIMESTAMP '2024-01-01 10:00:00')")
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    out = s.run("SELECT ltz FROM t")
    assert out.schema.field("ltz").type == pa.timestamp("us", tz="Asia/Shanghai")
    value = out.column("ltz")[0].as_py()
    assert value.replace(tzinfo=None) == dt.datetime(2024, 1, 1, 18, 0)  # the wall clock in Shanghai
    assert value.astimezone(UTC) == dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC)  # the same instant
    s.run("SET 'table.local-time-zone' = 'GMT-08:00'")
    value = s.run("SELECT ltz FROM t").column("ltz")[0].as_py()
    assert value.replace(tzinfo=None) == dt.datetime(2024, 1, 1, 2, 0)


def test_strings_and_timestamps_into_ltz_are_read_in_the_session_zone(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    s.run("INSERT INTO t (id, ltz) VALUES (1, '2024-01-01 10:00:00'), (2, NULL)")
    s.run("INSERT INTO t (id, ltz) VALUES (3, TIMESTAMP '2024-01-01 10:00:00')")
    s.run("INSERT INTO t (id, ts) VALUES (4, TIMESTAMP '2024-01-01 10:00:00')")
    s.run("SET 'table.local-time-zone' = 'UTC'")
    rows = s.run("SELECT id, ltz FROM t WHERE ltz IS NOT NULL ORDER BY id").to_pylist()
    assert [(r["id"], r["ltz"].astimezone(UTC).replace(tzinfo=None)) for r in rows] == \
        [(1, dt.datetime(2024, 1, 1, 2, 0)), (3, dt.datetime(2024, 1, 1, 2, 0))]
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    # TIMESTAMP <-> TIMESTAMP_LTZ conversions go through the session zone
    row = s.run("SELECT CAST(ts AS TIMESTAMP_LTZ(3)) AS a, CAST(CAST(ts AS TIMESTAMP_LTZ(3)) AS TIMESTAMP(3)) AS b, "
                "CAST(ts AS TIMESTAMP WITH LOCAL TIME ZONE) AS c FROM t WHERE id = 4").to_pylist()[0]
    assert row["a"].astimezone(UTC).replace(tzinfo=None) == dt.datetime(2024, 1, 1, 2, 0)
    assert row["b"] == dt.datetime(2024, 1, 1, 10, 0) and row["c"] == row["a"]
    row = s.run("SELECT CAST(ltz AS TIMESTAMP(3)) AS w FROM t WHERE id = 1").to_pylist()[0]
    assert row["w"] == dt.datetime(2024, 1, 1, 10, 0)


def test_ltz_filters_read_literals_in_the_session_zone(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    s.run("INSERT INTO t (id, ltz) VALUES (1, '2024-01-01 10:00:00'), (2, '2024-01-01 12:00:00')")
    for where in ("ltz = '2024-01-01 10:00:00'", "ltz < TIMESTAMP '2024-01-01 11:00:00'",
                  "ltz BETWEEN '2024-01-01 09:00:00' AND '2024-01-01 11:00:00'"):
        assert s.run(f"SELECT id FROM t WHERE {where}").column("id").to_pylist() == [1], where


def test_clock_and_epoch_functions_follow_the_zone(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    row = s.run("SELECT TO_TIMESTAMP_LTZ(0, 3) AS a, TO_TIMESTAMP_LTZ(1704067200, 0) AS b, FROM_UNIXTIME(0) AS c, "
                "UNIX_TIMESTAMP('1970-01-01 08:00:00') AS d, CAST(TO_TIMESTAMP_LTZ(1500, 3) AS TIMESTAMP(3)) AS e, "
                "LOCALTIMESTAMP AS f, CURRENT_TIMESTAMP AS g, NOW() AS h").to_pylist()[0]
    assert row["a"] == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert row["b"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert row["c"] == "1970-01-01 08:00:00" and row["d"] == 0
    assert row["e"] == dt.datetime(1970, 1, 1, 8, 0, 1, 500000)
    now = dt.datetime.now(UTC)
    assert abs(row["g"] - now) < dt.timedelta(minutes=5) and abs(row["h"] - now) < dt.timedelta(minutes=5)
    shanghai_wall = now.astimezone(dt.timezone(dt.timedelta(hours=8))).replace(tzinfo=None)
    assert abs(row["f"] - shanghai_wall) < dt.timedelta(minutes=5)
    with pytest.raises(SqlError, match="TO_TIMESTAMP_LTZ takes an epoch number"):
        s.run("SELECT TO_TIMESTAMP_LTZ(0, 6)")


def test_unknown_zone_is_refused_and_the_old_one_kept(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    with pytest.raises(SqlError, match="Mars/Base"):
        s.run("SET 'table.local-time-zone' = 'Mars/Base'")
    assert s.run("SELECT FROM_UNIXTIME(0) AS c").column("c").to_pylist() == ["1970-01-01 08:00:00"]


def test_default_zone_is_the_machines(s):
    from paimon_lab.sql.duck import host_time_zone

    zone = host_time_zone()
    expected = pd.Timestamp(0, tz=zone).strftime("%Y-%m-%d %H:%M:%S")
    assert s.run("SELECT FROM_UNIXTIME(0) AS c").column("c").to_pylist() == [expected]
    s.run("SET 'table.local-time-zone' = 'default'")
    assert s.run("SELECT FROM_UNIXTIME(0) AS c").column("c").to_pylist() == [expected]


NANOS = "2024-01-01 10:00:00.123456789"


def test_timestamp9_literals_keep_nanoseconds(s):
    s.run(f"INSERT INTO t (id, ts9) VALUES (1, TIMESTAMP '{NANOS}'), (2, TIMESTAMP '2024-01-01 10:00:00.123456')")
    out = s.run("SELECT id, ts9 FROM t ORDER BY id")
    assert out.column("ts9").cast(pa.int64()).to_pylist() == [pd.Timestamp(NANOS).value,
                                                            pd.Timestamp("2024-01-01 10:00:00.123456").value]
    for where, ids in ((f"ts9 = TIMESTAMP '{NANOS}'", [1]), (f"ts9 = '{NANOS}'", [1]),
                       ("ts9 > TIMESTAMP '2024-01-01 10:00:00.123456788'", [1]),
                       ("ts9 < TIMESTAMP '2024-01-01 10:00:00.1234567'", [2]),
                       (f"ts9 IN (TIMESTAMP '{NANOS}')", [1])):
        assert s.run(f"SELECT id FROM t WHERE {where} ORDER BY id").column("id").to_pylist() == ids, where
    lit = s.run(f"SELECT TIMESTAMP '{NANOS}' AS x, CAST('{NANOS}' AS TIMESTAMP(9)) AS y, "
                f"CAST('{NANOS}' AS TIMESTAMP(3)) AS z")
    assert lit.column("x").type == pa.timestamp("ns") and lit.column("y").type == pa.timestamp("ns")
    assert lit.column("x").cast(pa.int64())[0].as_py() == pd.Timestamp(NANOS).value
    assert lit.column("y").cast(pa.int64())[0].as_py() == pd.Timestamp(NANOS).value
    assert lit.column("z").to_pylist() == [dt.datetime(2024, 1, 1, 10, 0, 0, 123000)]


def test_a_column_named_timestamp_is_still_a_column(s):
    s.run("CREATE TABLE e (`timestamp` BIGINT)")
    s.run("INSERT INTO e VALUES (5)")
    assert s.run("SELECT timestamp AS timestamp FROM e").to_pylist() == [{"timestamp": 5}]


def test_python_datetimes_bind_as_instants_or_wall_clocks(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    instant = dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    s.run("INSERT INTO t (id, ts, ltz) VALUES (?, ?, ?)", [1, dt.datetime(2024, 1, 1, 10, 0), instant])
    row = s.run("SELECT ts, ltz FROM t WHERE ltz = ?", [instant]).to_pylist()[0]
    assert row["ts"] == dt.datetime(2024, 1, 1, 10, 0) and row["ltz"] == instant


def test_time_travel_reads_its_timestamp_in_the_session_zone(s, tmp_path):
    from paimon_lab import Table

    s.run("INSERT INTO t (id) VALUES (1)")
    millis = Table.open(str(tmp_path / "db.db" / "t")).snapshots()[0].time_millis
    s.run("SET 'table.local-time-zone' = 'GMT+10:00'")
    shifted = dt.datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None) + dt.timedelta(hours=10)
    at = (shifted + dt.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert s.run(f"SELECT id FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{at}'").column("id").to_pylist() == [1]
    early = (shifted - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    # before the first snapshot: no rows, as Java's from-timestamp scan finds no snapshot
    assert s.run(f"SELECT id FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{early}'").num_rows == 0


def test_ltz_as_string_is_the_wall_clock_without_offset(s):
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    s.run("INSERT INTO t (id, ltz, ts) VALUES (1, '2024-01-01 12:00:00.123', TIMESTAMP '2024-01-01 12:00:00')")
    row = s.run("SELECT CAST(ltz AS STRING) AS a, CAST(ts AS STRING) AS b, CAST(id AS STRING) AS c, "
                "CAST(TO_TIMESTAMP_LTZ(0, 0) AS VARCHAR(30)) AS d, CAST('x+08' AS STRING) AS e FROM t").to_pylist()[0]
    assert row == {"a": "2024-01-01 12:00:00.123", "b": "2024-01-01 12:00:00.000", "c": "1",
                   "d": "1970-01-01 08:00:00.000", "e": "x+08"}  # TIMESTAMP(3), TIMESTAMP_LTZ(3): 3 digits


def test_a_materialized_refresh_outside_a_statement_uses_the_session_zone(s):
    from paimon_lab.sql.materialized_table import refresh

    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    s.run("INSERT INTO t (id, ltz) VALUES (1, '2024-01-01 12:00:00')")
    s.run("CREATE MATERIALIZED TABLE m FRESHNESS = INTERVAL '1' HOUR AS "
          "SELECT id, CAST(ltz AS TIMESTAMP(3)) AS wall FROM t")
    s.run("ALTER MATERIALIZED TABLE m SUSPEND")
    s.run("INSERT INTO t (id, ltz) VALUES (2, '2024-01-01 13:00:00')")
    refresh(s, "c", "db", "m")  # as the refresh timer does, on its own thread, outside any statement
    assert s.run("SELECT id, wall FROM m ORDER BY id").to_pylist() == [
        {"id": 1, "wall": dt.datetime(2024, 1, 1, 12, 0)}, {"id": 2, "wall": dt.datetime(2024, 1, 1, 13, 0)}]


def test_delete_and_update_read_ltz_literals_in_the_session_zone(s):
    s.run("CREATE TABLE p (k INT PRIMARY KEY NOT ENFORCED, l TIMESTAMP_LTZ(3), n INT)")
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'; SET 'execution.runtime-mode' = 'batch'")
    s.run("INSERT INTO p VALUES (1, '2024-01-01 08:00:00', 0), (2, '2024-01-01 09:00:00', 0)")
    s.run("UPDATE p SET n = 1 WHERE l = '2024-01-01 08:00:00'")
    s.run("DELETE FROM p WHERE l = TIMESTAMP '2024-01-01 09:00:00'")
    assert s.run("SELECT k, n FROM p").to_pylist() == [{"k": 1, "n": 1}]


def test_time_travel_expressions_read_in_the_session_zone(s):
    from paimon_lab.utils.clock import use_clock

    base = int(dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC).timestamp() * 1000)  # 18:00 in Shanghai
    for i in range(3):  # snapshots at 10:00, 11:00, 12:00 UTC
        with use_clock(base + i * 3_600_000):
            s.run(f"INSERT INTO t (id) VALUES ({i})")
    s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")
    half = base + 5_400_000  # 11:30 UTC, 19:30 in Shanghai: snapshot 2 (id 1) is current
    for at in ["TIMESTAMP '2024-01-01 19:30:00'", "TIMESTAMP '2024-01-01 18:30:00' + INTERVAL '1' HOUR",
               f"TO_TIMESTAMP_LTZ({half}, 3)", f"TO_TIMESTAMP_LTZ({half // 1000}, 0)",
               f"TO_TIMESTAMP_LTZ({half - 3_600_000}, 3) + INTERVAL '1' HOUR",
               "CAST('2024-01-01 19:30:00' AS TIMESTAMP_LTZ(3))",
               "CAST(TIMESTAMP '2024-01-01 19:30:00' AS TIMESTAMP_LTZ(3))"]:
        assert s.run(f"SELECT max(id) AS m FROM t FOR SYSTEM_TIME AS OF {at}").to_pylist() == [{"m": 1}], at
    s.run("SET 'table.local-time-zone' = 'UTC'")  # the same wall clock is now 8 hours later: the latest
    assert s.run("SELECT max(id) AS m FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 19:30:00'").to_pylist() == \
        [{"m": 2}]
    assert s.run(f"SELECT max(id) AS m FROM t FOR SYSTEM_TIME AS OF TO_TIMESTAMP_LTZ({half}, 3)").to_pylist() == \
        [{"m": 1}]  # an instant is the same instant in every zone
    assert s.run(f"SELECT id FROM t FOR SYSTEM_TIME AS OF TO_TIMESTAMP_LTZ({base - 1}, 3)").num_rows == 0


def test_scan_timestamp_hint_is_read_in_the_machines_zone(s, monkeypatch):
    import time

    from paimon_lab.utils.clock import use_clock

    monkeypatch.setenv("TZ", "America/New_York")  # the machine's zone (Java: the JVM's default zone)
    time.tzset()
    try:
        base = int(dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC).timestamp() * 1000)  # 05:00 in New York
        for i in range(3):
            with use_clock(base + i * 3_600_000):
                s.run(f"INSERT INTO t (id) VALUES ({i})")
        s.run("SET 'table.local-time-zone' = 'Asia/Shanghai'")  # not this one
        got = s.run("SELECT max(id) AS m FROM t /*+ OPTIONS('scan.timestamp' = '2024-01-01 06:30:00') */")
        assert got.to_pylist() == [{"m": 1}]
    finally:
        monkeypatch.undo()
        time.tzset()

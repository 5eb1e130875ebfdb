"""BinaryRow bytes and bucket hashing, checked against pypaimon and Java's documented layout."""

from __future__ import annotations

import datetime as dt
import random
import struct
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_lab.core import binary_row as br
from paimon_lab.errors import DataValidationError, UnsupportedTypeError
from paimon_lab.core.types import parse_type

UTC = dt.timezone.utc


def types_of(*names: str) -> list:
    return [parse_type(n) for n in names]


# ------------------------------------------------------------------ pypaimon, in its worker (tests/oracles)
# The functions named _py_* run in the pypaimon worker (each on its own: they call no other
# function of this module): the test sends their source, Paimon type strings and plain Python
# values, and gets bytes or ints back, one call per batch of rows.

def _py_serialize_rows(types: list[str], rows: list[list]) -> list[bytes]:
    """pypaimon's GenericRowSerializer bytes of each row (fields f0, f1... of ``types``)."""
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer
    from pypaimon.table.row.internal_row import RowKind

    fields = [DataField(i, f"f{i}", AtomicType(t)) for i, t in enumerate(types)]
    return [GenericRowSerializer.to_bytes(GenericRow(list(r), fields, RowKind.INSERT)) for r in rows]


def _py_hash_words(blobs: list[bytes]) -> list[int]:
    """pypaimon's bucket hash (row_key_extractor._hash_bytes_by_words) as signed 32-bit ints."""
    import numpy as np
    from pypaimon.write.row_key_extractor import _hash_bytes_by_words

    return [int(np.uint32(_hash_bytes_by_words(b)).view(np.int32)) for b in blobs]


def _py_row_hashes(types: list[str], rows: list[list]) -> list[int]:
    """The hash pypaimon buckets each row by: its bytes past the 4-byte arity, hashed by words."""
    import numpy as np
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer
    from pypaimon.table.row.internal_row import RowKind
    from pypaimon.write.row_key_extractor import _hash_bytes_by_words

    fields = [DataField(i, f"f{i}", AtomicType(t)) for i, t in enumerate(types)]
    return [int(np.uint32(_hash_bytes_by_words(GenericRowSerializer.to_bytes(
        GenericRow(list(r), fields, RowKind.INSERT))[4:])).view(np.int32)) for r in rows]


def _py_fixed_buckets(types: list[str], batch: pa.RecordBatch, buckets: int) -> list[int]:
    """FixedBucketRowKeyExtractor's buckets for ``batch`` (bucket-key: every column)."""
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.schema.schema import Schema
    from pypaimon.schema.table_schema import TableSchema
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

    fields = [DataField(i, f"f{i}", AtomicType(t)) for i, t in enumerate(types)]
    schema = TableSchema.from_schema(0, Schema(fields, options={
        "bucket": str(buckets), "bucket-key": ",".join(f"f{i}" for i in range(len(types)))}))
    return list(FixedBucketRowKeyExtractor(schema)._extract_buckets_batch(batch))


def _py_buckets_from_hashes(hashes: list[int], buckets: int) -> list[int]:
    from pypaimon.write.row_key_extractor import _bucket_from_hash

    return [_bucket_from_hash(h & 0xFFFFFFFF, buckets) for h in hashes]


def pypaimon_serialize(pypaimon, rows: list[list], types: list) -> list[bytes]:
    return pypaimon.run(_py_serialize_rows, [str(t) for t in types], [list(r) for r in rows])


def pypaimon_hashes(pypaimon, rows: list[list], types: list) -> list[int]:
    return pypaimon.run(_py_row_hashes, [str(t) for t in types], [list(r) for r in rows])


def is_wide(t) -> bool:
    """Java reserves variable-part space for nulls of these; pypaimon 2.1.0 does not."""
    return (t.root == "DECIMAL" and t.precision > 18) or (t.root.startswith("TIMESTAMP") and t.precision > 3)


def decimal_of(unscaled: int, scale: int) -> Decimal:
    sign, digits, _ = Decimal(unscaled).as_tuple()
    return Decimal((sign, digits, -scale))


# ------------------------------------------------------------------ fixed examples

def test_docs_partition_example():
    expected = b"\x00\x00\x00\x01" + bytes(8) + b"\x08\x00\x00\x00\x10\x00\x00\x00" + b"20241011"
    t = types_of("STRING")
    assert br.serialize(["20241011"], t) == expected
    assert br.deserialize(expected, t) == ["20241011"]
    assert br.from_bytes(expected[4:], t) == ["20241011"]


def test_empty_row():
    assert br.EMPTY == b"\x00\x00\x00\x00" + bytes(8)
    assert br.deserialize(br.EMPTY, []) == []
    assert br.deserialize(br.EMPTY, types_of("INT", "STRING")) == [None, None]


def test_layout_widths():
    assert [br.null_bits_width(a) for a in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    assert br.fixed_part_size(3) == 8 + 24


def test_inline_string_slot_and_null_bit():
    row = br.to_bytes(["abc", None, ""], types_of("STRING", "INT", "STRING"))
    assert row[0] == 0
    assert row[1] == 0b10
    assert row[8:16] == b"abc" + bytes(4) + bytes([0x83])
    assert row[16:24] == bytes(8)
    assert row[24:32] == bytes(7) + bytes([0x80])
    assert len(row) == 32


def test_long_binary_is_padded_to_words():
    data = bytes(range(1, 10))
    row = br.to_bytes([data], types_of("BYTES"))
    assert struct.unpack_from("<Q", row, 8)[0] == (16 << 32) | 9
    assert row[16:] == data + bytes(7)


@pytest.mark.parametrize("unscaled, expected", [
    (0, b"\x00"), (1, b"\x01"), (-1, b"\xff"), (127, b"\x7f"), (128, b"\x00\x80"),
    (-128, b"\x80"), (-129, b"\xff\x7f"), (-32768, b"\x80\x00"), (255, b"\x00\xff"),
    (10**38 - 1, (10**38 - 1).to_bytes(16, "big")), (-(2**127), b"\x80" + bytes(15)),
])
def test_wide_decimal_bytes_are_java_big_integer_bytes(unscaled, expected):
    t = types_of("DECIMAL(38, 0)") if abs(unscaled) < 10**38 else None
    if t is None:
        assert br._java_unscaled_bytes(unscaled) == expected
        return
    row = br.to_bytes([Decimal(unscaled)], t)
    assert struct.unpack_from("<Q", row, 8)[0] == (16 << 32) | len(expected)
    assert row[16:] == expected + bytes(16 - len(expected))
    assert br.from_bytes(row, t) == [Decimal(unscaled)]
    assert br.rows_to_bytes([pa.array([Decimal(unscaled)], pa.decimal128(38, 0))], t) == [row]


def test_null_wide_decimal_and_timestamp_still_reserve_space():
    t = types_of("DECIMAL(20, 2)", "TIMESTAMP(6)", "STRING")
    row = br.to_bytes([None, None, "abcdefghij"], t)
    fixed = 8 + 3 * 8
    assert row[1] == 0b11
    assert struct.unpack_from("<Q", row, 8)[0] == fixed << 32
    assert struct.unpack_from("<Q", row, 16)[0] == (fixed + 16) << 32
    assert struct.unpack_from("<Q", row, 24)[0] == (fixed + 24) << 32 | 10
    assert row[fixed:fixed + 24] == bytes(24)
    assert len(row) == fixed + 16 + 8 + 16
    assert br.from_bytes(row, t) == [None, None, "abcdefghij"]
    arrays = [pa.array([None], pa.decimal128(20, 2)), pa.array([None], pa.timestamp("us")),
              pa.array(["abcdefghij"])]
    assert br.rows_to_bytes(arrays, t) == [row]
    assert br.hash_codes(arrays, t).tolist() == [br.hash_code([None, None, "abcdefghij"], t)]


def test_nanosecond_timestamp_layout():
    value = pd.Timestamp("1969-12-31 23:59:59.123456789")
    t = types_of("TIMESTAMP(9)")
    row = br.to_bytes([value], t)
    nanos = value.value
    assert struct.unpack_from("<Q", row, 8)[0] == (16 << 32) | (nanos % 1_000_000)
    assert struct.unpack_from("<q", row, 16)[0] == nanos // 1_000_000
    assert br.from_bytes(row, t) == [value]
    assert br.to_bytes([np.datetime64(nanos, "ns")], t) == row
    array = pa.array([value], pa.timestamp("ns"))
    assert br.rows_to_bytes([array], t) == [row]


def test_ltz_timestamps_count_in_utc():
    t = types_of("TIMESTAMP_LTZ(3)")
    aware = dt.datetime(2024, 1, 1, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    assert br.to_bytes([aware], t) == br.to_bytes([dt.datetime(2024, 1, 1, tzinfo=UTC)], t)
    assert br.from_bytes(br.to_bytes([aware], t), t) == [dt.datetime(2024, 1, 1, tzinfo=UTC)]


def test_numpy_scalars_are_accepted():
    t = types_of("BIGINT", "FLOAT", "BOOLEAN", "DATE", "STRING", "DECIMAL(10, 2)")
    plain = [5, 1.5, True, dt.date(2020, 2, 29), "x", Decimal("3.00")]
    numpy_values = [np.int64(5), np.float32(1.5), np.bool_(True), np.datetime64("2020-02-29"),
                    np.str_("x"), np.int32(3)]
    assert br.to_bytes(numpy_values, t) == br.to_bytes(plain, t)


def test_decimal_rounds_half_up():
    t = types_of("DECIMAL(5, 1)")
    assert br.to_bytes([Decimal("1.25")], t) == br.to_bytes([Decimal("1.3")], t)
    assert br.to_bytes([Decimal("-1.25")], t) == br.to_bytes([Decimal("-1.3")], t)


def test_arity_mismatch_decodes_common_prefix():
    t3 = types_of("INT", "STRING", "DOUBLE")
    data = br.serialize([1, "abcdefghijk", 2.5], t3)
    assert br.deserialize(data, t3[:2]) == [1, "abcdefghijk"]
    assert br.deserialize(data, t3 + types_of("DATE")) == [1, "abcdefghijk", 2.5, None]


@pytest.mark.parametrize("bad_type", ["ARRAY<INT>", "MAP<INT, STRING>", "ROW<a INT>", "MULTISET<INT>"])
def test_nested_types_are_unsupported(bad_type):
    """Nested values cannot be encoded; a null nested field is just its null bit (stats rows of
    tables with nested columns carry no min/max for them)."""
    with pytest.raises(UnsupportedTypeError):
        br.to_bytes([[1]], types_of(bad_type))
    row = br.serialize([None], types_of(bad_type))
    assert row[:4] == b"\x00\x00\x00\x01" and row[4] == 0 and row[5] & 1 and set(row[12:]) == {0}


@pytest.mark.parametrize("value, type_name", [
    (Decimal("1000.00"), "DECIMAL(5, 2)"), (128, "TINYINT"), ("x", "INT"), (1, "STRING"),
    ("x", "BYTES"), (1.5, "BOOLEAN"), (Decimal("NaN"), "DECIMAL(5, 2)"),
])
def test_bad_values_are_rejected(value, type_name):
    with pytest.raises(DataValidationError):
        br.to_bytes([value], types_of(type_name))


def test_truncated_row_is_corrupt():
    from paimon_lab.errors import CorruptFileError

    with pytest.raises(CorruptFileError):
        br.deserialize(br.serialize([1, 2], types_of("INT", "INT"))[:-8], types_of("INT", "INT"))


# ------------------------------------------------------------------ byte equality with pypaimon

LONG_TEXT = "paimon-lab " * 9 + "é☃𝄞"
SAMPLES = {
    "BOOLEAN": [True, False],
    "TINYINT": [-128, 127, 0],
    "SMALLINT": [-32768, 32767, -1],
    "INT": [-(2**31), 2**31 - 1, 42],
    "BIGINT": [-(2**63), 2**63 - 1, -7],
    "FLOAT": [1.5, -0.0, 3.4e38, float("inf")],
    "DOUBLE": [1e-300, -2.5, float("-inf"), 0.1],
    "DECIMAL(10, 2)": [Decimal("12345678.90"), Decimal("-0.01"), Decimal("0.00")],
    "DECIMAL(18, 0)": [Decimal(10**18 - 1), Decimal(-(10**18 - 1))],
    "DECIMAL(20, 2)": [Decimal("-123456789012345678.99"), Decimal("0.00"), Decimal("1.28"), Decimal("-1.27")],
    "DECIMAL(38, 10)": [Decimal("1234567890123456789012345678.0123456789"), Decimal("-0.0000000001")],
    "CHAR(3)": ["abc", "é"],
    "VARCHAR(10)": ["", "abcdefg", "abcdefgh"],
    "STRING": ["", "a", "abcdefg", "abcdefgh", "héllo wörld ☃", LONG_TEXT],
    "BINARY(2)": [b"\x00\xff"],
    "BYTES": [b"", b"1234567", b"12345678", bytes(range(33))],
    "DATE": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(9999, 12, 31), dt.date(1, 1, 1)],
    "TIME": [dt.time(0), dt.time(23, 59, 59, 999000), dt.time(12, 34, 56, 789000)],
    "TIMESTAMP(0)": [dt.datetime(2024, 10, 11, 1, 2, 3), dt.datetime(1900, 1, 1)],
    "TIMESTAMP(3)": [dt.datetime(2024, 10, 11, 1, 2, 3, 456000), dt.datetime(1969, 12, 31, 23, 59, 59, 999000)],
    "TIMESTAMP(6)": [dt.datetime(2024, 10, 11, 1, 2, 3, 456789), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
    "TIMESTAMP(9)": [dt.datetime(2024, 10, 11, 1, 2, 3, 456789), dt.datetime(1, 1, 1, 0, 0, 0, 1)],
    "TIMESTAMP_LTZ(3)": [dt.datetime(2024, 10, 11, 1, 2, 3, 456000, tzinfo=UTC)],
    "TIMESTAMP_LTZ(6)": [dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC)],
    "TIMESTAMP_LTZ(9)": [dt.datetime(2100, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)],
}


@pytest.mark.parametrize("type_name", sorted(SAMPLES))
def test_single_field_bytes_match_pypaimon(pypaimon, type_name):
    t = types_of(type_name)
    values = SAMPLES[type_name] + ([] if is_wide(t[0]) else [None])
    theirs = pypaimon_serialize(pypaimon, [[v] for v in values], t)
    for v, expected in zip(values, theirs, strict=True):
        ours = br.serialize([v], t)
        assert ours == expected, v
        decoded = br.deserialize(ours, t)[0]
        if isinstance(v, float) and v != v:
            assert decoded != decoded
        elif type_name == "FLOAT" and v is not None:
            assert decoded == struct.unpack("<f", struct.pack("<f", v))[0]
        else:
            assert decoded == v


def test_wide_row_of_every_type_matches_pypaimon(pypaimon):
    rng = random.Random(7)
    names = sorted(SAMPLES) * 3
    t = types_of(*names)
    rows = [[None if not is_wide(x) and rng.random() < 0.3 else rng.choice(SAMPLES[n]) for n, x in zip(names, t)]
            for _ in range(20)]
    assert len(t) > 56
    for values, theirs in zip(rows, pypaimon_serialize(pypaimon, rows, t), strict=True):
        assert br.serialize(values, t) == theirs
        assert br.deserialize(br.serialize(values, t), t) == [
            struct.unpack("<f", struct.pack("<f", v))[0] if n == "FLOAT" and v is not None else v
            for n, v in zip(names, values)]


# ------------------------------------------------------------------ round trips

def _timestamp_values(precision: int, ltz: bool):
    tz = UTC if ltz else None
    if precision > 6:
        return st.integers(pd.Timestamp.min.value, pd.Timestamp.max.value).map(
            lambda n: pd.Timestamp(n, unit="ns", tz=tz))
    keep = 10 ** (6 - precision)
    return st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(
        lambda d: d.replace(microsecond=d.microsecond // keep * keep, tzinfo=tz))


def _decimal_values(precision: int, scale: int):
    return st.integers(-(10**precision) + 1, 10**precision - 1).map(lambda u: decimal_of(u, scale))


def value_strategy(t):
    r = t.root
    if r == "BOOLEAN":
        return st.booleans()
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[r]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if r == "FLOAT":
        return st.floats(width=32, allow_nan=False)
    if r == "DOUBLE":
        return st.floats(allow_nan=False)
    if r == "DECIMAL":
        return _decimal_values(t.precision, t.scale)
    if r in ("CHAR", "VARCHAR"):
        return st.one_of(st.text(max_size=8), st.text(min_size=8, max_size=40))
    if r in ("BINARY", "VARBINARY"):
        return st.binary(max_size=40)
    if r == "DATE":
        return st.dates()
    if r == "TIME":
        return st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    return _timestamp_values(t.precision, r == "TIMESTAMP_LTZ")


TYPE_POOL = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
             "DECIMAL(18, 4)", "DECIMAL(19, 0)", "DECIMAL(38, 18)", "CHAR(5)", "STRING", "BYTES",
             "DATE", "TIME", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
             "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(9)"]


@st.composite
def typed_rows(draw, max_rows: int = 1):
    names = draw(st.lists(st.sampled_from(TYPE_POOL), min_size=1, max_size=6))
    types = types_of(*names)
    rows = draw(st.lists(st.tuples(*[st.one_of(st.none(), value_strategy(t)) for t in types]),
                         min_size=1, max_size=max_rows))
    return types, [list(r) for r in rows]


@settings(max_examples=300, deadline=None)
@given(typed_rows())
def test_serialize_round_trip(case):
    types, (row,) = case
    data = br.serialize(row, types)
    assert len(data) % 8 == 4
    assert br.deserialize(data, types) == row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_rows(max_rows=12))
def test_columnar_rows_equal_scalar_rows(case):
    types, rows = case
    columns = [pa.array([r[i] for r in rows], type=t.to_arrow()) for i, t in enumerate(types)]
    expected = [br.to_bytes(r, types) for r in rows]
    assert br.rows_to_bytes(columns, types) == expected
    assert br.hash_codes(columns, types).tolist() == [br.hash_bytes(b) for b in expected]


# ------------------------------------------------------------------ hashing and buckets

def _random_column(type_name: str, n: int, rng: np.random.Generator, null_rate: float) -> list:
    t = parse_type(type_name)
    r = t.root
    if r in ("CHAR", "VARCHAR"):
        alphabet = list("abcXYZ019 ") + ["é", "☃", "𝄞"]
        values = ["".join(rng.choice(alphabet, size=int(k))) for k in rng.integers(0, 30, n)]
    elif r in ("BINARY", "VARBINARY"):
        values = [rng.bytes(int(k)) for k in rng.integers(0, 25, n)]
    elif r == "BOOLEAN":
        values = [bool(x) for x in rng.integers(0, 2, n)]
    elif r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        info = np.iinfo(t.to_arrow().to_pandas_dtype())
        values = [int(x) for x in rng.integers(info.min, info.max, n, endpoint=True)]
    elif r in ("FLOAT", "DOUBLE"):
        values = [float(x) for x in rng.normal(0, 1e6, n).astype(t.to_arrow().to_pandas_dtype())]
    elif r == "DECIMAL":
        magnitudes = [int.from_bytes(rng.bytes(16), "little") % 10 ** int(k)
                      for k in rng.integers(1, t.precision + 1, n)]
        values = [decimal_of(m if s else -m, t.scale) for m, s in zip(magnitudes, rng.integers(0, 2, n))]
    elif r == "DATE":
        values = [dt.date(1970, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(-200_000, 200_000, n)]
    elif r == "TIME":
        values = [(dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=int(x))).time()
                  for x in rng.integers(0, 86_400_000, n)]
    else:
        keep = 10 ** (6 - min(t.precision, 6))
        micros = rng.integers(-(10**16), 10**16, n) // keep * keep
        tz = UTC if r == "TIMESTAMP_LTZ" else None
        values = [(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(x))).replace(tzinfo=tz) for x in micros]
    nulls = rng.random(n) < null_rate
    return [None if z else v for v, z in zip(values, nulls)]


KEY_CASES = [
    ["BIGINT"], ["INT"], ["STRING"], ["BYTES"], ["BOOLEAN", "TINYINT", "SMALLINT"],
    ["FLOAT", "DOUBLE"], ["DATE", "TIME"], ["DECIMAL(10, 2)"], ["DECIMAL(25, 5)"], ["DECIMAL(38, 0)"],
    ["TIMESTAMP(0)"], ["TIMESTAMP(3)"], ["TIMESTAMP(6)"], ["TIMESTAMP_LTZ(3)"], ["TIMESTAMP_LTZ(6)"],
    ["STRING", "INT"], ["INT", "STRING", "STRING", "BIGINT"], ["CHAR(10)", "DECIMAL(20, 3)", "TIMESTAMP(6)"],
]


@pytest.mark.parametrize("names", KEY_CASES, ids=lambda names: "+".join(names))
def test_hash_codes_and_buckets_match_pypaimon(pypaimon, names):
    rng = np.random.default_rng(len(names) * 1000 + sum(map(len, names)))
    n = 400
    types = types_of(*names)
    columns = [_random_column(name, n, rng, 0.0 if is_wide(t) else 0.15) for name, t in zip(names, types)]
    arrays = [pa.array(c, type=t.to_arrow()) for c, t in zip(columns, types)]
    rows = [list(r) for r in zip(*columns)]

    hashes = br.hash_codes(arrays, types)
    assert hashes.dtype == np.int32
    assert hashes.tolist() == pypaimon_hashes(pypaimon, rows, types)

    batch = pa.RecordBatch.from_arrays(arrays, names=[f"f{i}" for i in range(len(types))])
    expected_buckets = pypaimon.run(_py_fixed_buckets, [str(t) for t in types], batch, 13)
    assert br.bucket_of(hashes, 13).tolist() == expected_buckets


def test_hash_codes_of_string_lengths_around_the_inline_limit(pypaimon):
    values = ["x" * k for k in range(0, 70)] + ["é" * k for k in range(0, 20)] + [None]
    random.Random(3).shuffle(values)
    t = types_of("STRING")
    assert br.hash_codes([pa.array(values)], t).tolist() == pypaimon_hashes(pypaimon, [[v] for v in values], t)


def test_hash_codes_accepts_chunked_sliced_dictionary_and_large_arrays():
    values = ["a", None, "abcdefghijkl", "b", "abcdefghijkl", "", "zz" * 20]
    t = types_of("STRING")
    expected = [br.hash_code([v], t) for v in values]
    chunked = pa.chunked_array([values[:3], values[3:]])
    sliced = pa.array(["pad"] + values + ["pad"]).slice(1, len(values))
    assert br.hash_codes([chunked], t).tolist() == expected
    assert br.hash_codes([sliced], t).tolist() == expected
    assert br.hash_codes([pa.array(values).dictionary_encode()], t).tolist() == expected
    assert br.hash_codes([pa.array(values, pa.large_string())], t).tolist() == expected
    assert br.hash_codes([pa.array(values, pa.string_view())], t).tolist() == expected
    ints = pa.array(list(range(10)) + [None])
    assert br.hash_codes([ints.slice(3)], types_of("BIGINT")).tolist() == [
        br.hash_code([v], types_of("BIGINT")) for v in ints.slice(3).to_pylist()]


def test_hash_codes_of_nanosecond_timestamps():
    values = [pd.Timestamp("2024-01-01 00:00:00.000000001"), pd.Timestamp("1969-12-31 23:59:59.999999999"), None]
    t = types_of("TIMESTAMP(9)")
    array = pa.array(values, pa.timestamp("ns"))
    assert br.hash_codes([array], t).tolist() == [br.hash_code([v], t) for v in values]


def test_hash_codes_of_empty_columns():
    assert br.hash_codes([pa.array([], pa.string())], types_of("STRING")).tolist() == []


def test_hash_bytes_matches_pypaimon(pypaimon):
    rng = np.random.default_rng(1)
    blobs = [rng.bytes(size) for size in (0, 4, 8, 12, 64, 1000)]
    theirs = pypaimon.run(_py_hash_words, blobs)
    assert [br.hash_bytes(data) for data in blobs] == theirs


def test_bucket_of_uses_java_remainder(pypaimon):
    hashes = np.array([-7, 7, 0, -(2**31), 2**31 - 1, -1], dtype=np.int32)
    for buckets in (1, 3, 4, 7, 128):
        expected = pypaimon.run(_py_buckets_from_hashes, hashes.tolist(), buckets)
        assert br.bucket_of(hashes, buckets).tolist() == expected
    assert br.bucket_of(hashes, 3).tolist() == [1, 1, 0, 2, 1, 1]


@pytest.mark.slow
@pytest.mark.parametrize("type_name", ["BIGINT", "STRING"])
def test_hash_codes_of_a_million_rows(type_name):
    """A million rows in one vectorized call (speed is measured in bench/, not here)."""
    rng = np.random.default_rng(0)
    n = 1_000_000
    if type_name == "BIGINT":
        array = pa.array(rng.integers(-(2**63), 2**63 - 1, n))
    else:
        numbers = pa.array(rng.integers(0, 10**12, n)).cast(pa.string())
        array = pc.binary_repeat(numbers, pa.array(rng.integers(0, 4, n)))
    t = types_of(type_name)
    hashes = br.hash_codes([array], t)
    assert len(hashes) == n
    for i in range(0, n, 250_007):
        assert hashes[i] == br.hash_code([array[i].as_py()], t)


def test_hash_codes_of_many_rows_are_hashed_in_slices_on_threads(pypaimon):
    """Past 2 x 2^18 rows the hashes are computed in slices on worker threads: the same values,
    in row order, as one pass; spot-checked against pypaimon's row hash."""
    rng = np.random.default_rng(11)
    n = 2 * br._PARALLEL_HASH_ROWS + 1234
    types = types_of("BIGINT", "STRING")
    ids = pa.array(rng.integers(-10**12, 10**12, n), pa.int64())
    names = pa.array([f"k{i % 997}" if i % 5 else None for i in range(n)], pa.string())
    hashes = br.hash_codes([ids, names], types)
    assert hashes.tolist() == br._hash_codes([ids, names], types).tolist()
    picked = rng.integers(0, n, 50).tolist()
    theirs = pypaimon_hashes(pypaimon, [[ids[i].as_py(), names[i].as_py()] for i in picked], types)
    for i, expected in zip(picked, theirs, strict=True):
        assert hashes[i] == expected


def test_hash_codes_of_a_large_buffer_hashed_in_bounded_slices():
    """Above the parallel threshold rows are hashed in slices of at most _HASH_SLICE_ROWS (bounded
    memory): the codes equal those of one whole pass, slice boundaries and ragged tails included."""
    n = 2 * br._PARALLEL_HASH_ROWS + 12_345
    rng = np.random.default_rng(4)
    ids = pa.chunked_array([rng.integers(-10**12, 10**12, n // 3), rng.integers(0, 9, n - n // 3)])
    names = pa.array([f"name-{i}" * (i % 4) for i in range(n)])
    types = [parse_type("BIGINT"), parse_type("STRING")]
    sliced = br.hash_codes([ids, names], types)
    assert len(sliced) == n and -(-n // br._HASH_SLICE_ROWS) > br.WORKERS
    assert np.array_equal(sliced, br._hash_codes([ids, names], types))
    assert br.hash_codes([ids.slice(n - 7), names.slice(n - 7)], types).tolist() == \
        [br.hash_code([i, s], types) for i, s in zip(ids.slice(n - 7).to_pylist(), names.slice(n - 7).to_pylist())]

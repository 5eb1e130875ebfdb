"""Paimon types as Spark types, and the exact Arrow schema Spark expects back from a reader."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_lab.errors import UnsupportedTypeError
from paimon_lab.core import types as T

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

    from paimon_lab.core.schema import TableSchema


def spark_type(t: T.DataType) -> "DataType":
    """The Spark type that holds values of Paimon type ``t``."""
    from pyspark.sql import types as S

    if isinstance(t, T.ArrayType):
        return S.ArrayType(spark_type(t.element), t.element.nullable)
    if isinstance(t, T.MultisetType):
        return S.MapType(spark_type(t.element), S.IntegerType(), False)
    if isinstance(t, T.MapType):
        return S.MapType(spark_type(t.key), spark_type(t.value), t.value.nullable)
    if isinstance(t, T.RowType):
        return S.StructType([S.StructField(f.name, spark_type(f.type), f.type.nullable) for f in t.fields])
    root = t.root
    simple = {"BOOLEAN": S.BooleanType, "TINYINT": S.ByteType, "SMALLINT": S.ShortType, "INT": S.IntegerType,
              "BIGINT": S.LongType, "FLOAT": S.FloatType, "DOUBLE": S.DoubleType, "DATE": S.DateType,
              "CHAR": S.StringType, "VARCHAR": S.StringType, "BINARY": S.BinaryType, "VARBINARY": S.BinaryType,
              "TIMESTAMP": S.TimestampNTZType, "TIMESTAMP_LTZ": S.TimestampType}
    if root in simple:
        return simple[root]()
    if root == "DECIMAL":
        return S.DecimalType(t.precision, t.scale)
    if root == "TIME" and hasattr(S, "TimeType"):
        return S.TimeType()
    raise UnsupportedTypeError(f"Paimon type {t} has no Spark counterpart")


def spark_schema(schema: "TableSchema", *, rowkind: bool = False) -> "StructType":
    """The Spark schema of a Paimon table (with a leading ``rowkind`` column for change streams)."""
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [StructField(f.name, spark_type(f.type), f.type.nullable) for f in schema.fields]
    if rowkind:
        fields.insert(0, StructField("rowkind", StringType(), False))
    return StructType(fields)


def arrow_schema_for(schema: "StructType") -> pa.Schema:
    """The Arrow schema PySpark checks record batches from a reader against."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast rows read by paimon_lab to the exact Arrow layout Spark expects.

    The only lossy step is timestamp precision: Spark keeps microseconds, so nanosecond
    timestamps (TIMESTAMP(7..9)) are truncated, as Paimon's Spark connector does.
    """
    table = table.select(target.names)
    if table.schema.equals(target):
        return table
    return table.cast(target, safe=False)


__all__ = ["spark_type", "spark_schema", "arrow_schema_for", "conform"]

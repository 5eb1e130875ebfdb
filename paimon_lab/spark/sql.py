"""``sql(spark, statement)``: run SQL over Paimon tables with Spark (``%%paimon --engine spark``).

Every ``db.table`` the statement names that exists in the warehouse (also ``paimon.db.table``)
is registered as a temporary view of :func:`paimon_lab.spark.read_table` (files that need no
merge through Spark's Parquet/ORC reader, the rest through paimon_lab), and the statement is
run, rewritten to those views, with ``spark.sql``. ``VERSION AS OF n|'tag'`` and ``TIMESTAMP AS
OF millis`` pick a snapshot. ``INSERT INTO|OVERWRITE db.table <query>`` runs the query with Spark
and writes it with :func:`paimon_lab.spark.write_table`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from paimon_lab.catalog import Catalog
from paimon_lab.errors import PaimonLabError
from paimon_lab.spark.jobs import _ensure_registered, default_warehouse, write_table
from paimon_lab.spark.native import read_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _time_travel(table: Any) -> dict[str, str]:
    from sqlglot import exp

    version = table.args.get("version")
    if version is None:
        return {}
    value = version.expression
    text = value.name if isinstance(value, exp.Literal) else value.sql()
    if version.name.upper() == "TIMESTAMP":
        return {"timestamp-millis": text}
    return {"snapshot-id": text} if text.isdigit() else {"tag": text}


def sql(spark: "SparkSession", statement: str, warehouse: str | None = None) -> Any:
    """Run ``statement`` with Spark over the warehouse's Paimon tables. Returns the Spark
    DataFrame of a query, or the new snapshot id of an INSERT."""
    import sqlglot
    from sqlglot import exp

    warehouse = warehouse or default_warehouse()
    if not warehouse:
        raise PaimonLabError("sql() needs a warehouse: pass warehouse=... or call register(spark, warehouse=...)")
    _ensure_registered(spark)
    catalog = Catalog(warehouse)
    try:
        tree = sqlglot.parse_one(statement, read="spark")
    except sqlglot.errors.ParseError as e:
        raise PaimonLabError(f"Cannot parse SQL: {str(e).splitlines()[0]}") from None

    target = overwrite = None
    if isinstance(tree, exp.Insert):
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if isinstance(tree.this, exp.Schema):
            raise PaimonLabError("INSERT with a column list is not supported; select the table's columns in order")
        overwrite = bool(tree.args.get("overwrite"))
        tree = tree.expression

    def rewrite(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Table) or not node.db or node.catalog not in ("", "paimon"):
            return node
        ident = f"{node.db}.{node.name}"
        if not catalog.table_exists(ident):
            return node
        options = _time_travel(node)
        suffix = "_".join(re.sub(r"\W", "_", f"{k}_{v}") for k, v in options.items())
        view = f"__paimon_{node.db}_{node.name}" + (f"__{suffix}" if suffix else "")
        read_table(spark, ident, warehouse, options).createOrReplaceTempView(view)
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
        return exp.Table(this=exp.to_identifier(view), alias=alias)

    query = tree.transform(rewrite)
    df = spark.sql(query.sql(dialect="spark"))
    if target is None:
        return df
    ident = f"{target.db or 'default'}.{target.name}"
    if catalog.table_exists(ident):
        names = catalog.get_table(ident).schema.field_names
        if len(df.columns) != len(names):
            raise PaimonLabError(f"INSERT gives {len(df.columns)} columns; {ident} has {len(names)}: {names}")
        df = df.toDF(*names)  # INSERT is positional
    return write_table(df, ident, warehouse, "overwrite" if overwrite else "append")


__all__ = ["sql"]

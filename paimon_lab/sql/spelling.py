"""SQL spelling of names, strings and types: quoting, Flink type text, CREATE TABLE text for
SHOW CREATE TABLE, and the DuckDB type a Paimon type is cast to."""

from __future__ import annotations

from paimon_lab.core import types as T


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def type_sql(dt: T.DataType) -> str:
    """Flink SQL spelling of a Paimon type (nested field names quoted)."""
    if isinstance(dt, T.RowType):
        inner = ", ".join(f"{quote(f.name)} {type_sql(f.type)}" +
                          (f" {sql_string(f.description)}" if f.description else "") for f in dt.fields)
        return f"ROW<{inner}>" + ("" if dt.nullable else " NOT NULL")
    if isinstance(dt, T.ArrayType):
        return f"ARRAY<{type_sql(dt.element)}>" + ("" if dt.nullable else " NOT NULL")
    if isinstance(dt, T.MultisetType):
        return f"MULTISET<{type_sql(dt.element)}>" + ("" if dt.nullable else " NOT NULL")
    if isinstance(dt, T.MapType):
        return f"MAP<{type_sql(dt.key)}, {type_sql(dt.value)}>" + ("" if dt.nullable else " NOT NULL")
    return str(dt)


def create_table_sql(identifier: str, schema, extra_options: dict | None = None) -> str:
    """CREATE TABLE text for a TableSchema."""
    lines = []
    for f in schema.fields:
        line = f"  {quote(f.name)} {type_sql(f.type)}"
        if f.description:
            line += f" COMMENT {sql_string(f.description)}"
        lines.append(line)
    if schema.primary_keys:
        lines.append(f"  PRIMARY KEY ({', '.join(quote(k) for k in schema.primary_keys)}) NOT ENFORCED")
    out = f"CREATE TABLE {identifier} (\n" + ",\n".join(lines) + "\n)"
    if schema.comment:
        out += f" COMMENT {sql_string(schema.comment)}"
    if schema.partition_keys:
        out += f"\nPARTITIONED BY ({', '.join(quote(k) for k in schema.partition_keys)})"
    options = dict(schema.options)
    options.update(extra_options or {})
    if options:
        out += "\nWITH (\n" + ",\n".join(f"  {sql_string(k)} = {sql_string(str(v))}"
                                        for k, v in sorted(options.items())) + "\n)"
    return out


def duck_type(dt: T.DataType) -> str:
    """The DuckDB type a Paimon type is cast to before writing."""
    if isinstance(dt, T.ArrayType):
        return f"{duck_type(dt.element)}[]"
    if isinstance(dt, T.MultisetType):
        return f"MAP({duck_type(dt.element)}, INTEGER)"
    if isinstance(dt, T.MapType):
        return f"MAP({duck_type(dt.key)}, {duck_type(dt.value)})"
    if isinstance(dt, T.RowType):
        inner = ", ".join('"' + f.name.replace('"', '""') + '" ' + duck_type(f.type) for f in dt.fields)
        return f"STRUCT({inner})"
    r = dt.root
    simple = {"BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INTEGER",
              "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "CHAR": "VARCHAR", "VARCHAR": "VARCHAR",
              "BINARY": "BLOB", "VARBINARY": "BLOB", "DATE": "DATE", "TIME": "TIME"}
    if r in simple:
        return simple[r]
    if r == "DECIMAL":
        return f"DECIMAL({dt.precision}, {dt.scale})"
    if r == "TIMESTAMP":
        p = dt.precision
        return "TIMESTAMP" if p <= 6 else "TIMESTAMP_NS"  # DuckDB rounds into S/MS; the writer truncates
    if r == "TIMESTAMP_LTZ":
        return "TIMESTAMPTZ"
    return "VARCHAR"  # pragma: no cover

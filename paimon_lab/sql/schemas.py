"""Creating Paimon tables from parsed definitions: options normalized (keys given as options,
legacy options dropped) and validated, and a schema-0 with the exact Paimon types built and
checked against the merge engine before the catalog creates the table."""

from __future__ import annotations

import warnings
from dataclasses import replace

import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.errors import OptionError, PaimonLabError, TableAlreadyExistError
from paimon_lab.core.key_value import KeyValueLayout
from paimon_lab.mergetree.merge_engine import merge_function_for
from paimon_lab.core.options import validate_options
from paimon_lab.core.schema import new_schema
from paimon_lab.sql.clauses import ColumnDef
from paimon_lab.sql.lexer import TokenStream

# Options Paimon once had and no longer uses: dropped (with a warning) when a table is created.
LEGACY_OPTIONS = {"write-mode"}


def normalize_options(ts, options: dict[str, str], token, pks: list[str], parts: list[str]):
    """Move 'primary-key' / 'partition' options into keys, drop 'connector'='paimon' and legacy options."""
    options = dict(options)
    if options.get("connector", "").lower() == "paimon":
        options.pop("connector")
    if "primary-key" in options:
        listed = [k.strip() for k in options.pop("primary-key").split(",") if k.strip()]
        if pks and pks != listed:
            raise ts.error("PRIMARY KEY and the 'primary-key' option disagree", token)
        pks = listed
    if "partition" in options:
        listed = [k.strip() for k in options.pop("partition").split(",") if k.strip()]
        if parts and parts != listed:
            raise ts.error("PARTITIONED BY and the 'partition' option disagree", token)
        parts = listed
    for key in list(options):
        if key in LEGACY_OPTIONS:
            try:
                validate_options({key: options[key]})
            except OptionError:
                warnings.warn(f"Option '{key}' is obsolete in Paimon (the table's write mode follows from its "
                              "primary key); ignored", stacklevel=3)
                options.pop(key)
    try:
        options = validate_options(options)
    except OptionError as e:
        raise ts.error(str(e), token) from None
    return options, pks, parts


def build_schema(ts, columns: list[ColumnDef], pks, parts, options, comment, token, raw_options=None):
    """A validated schema-0 with the exact Paimon types of ``columns``."""
    options, pks, parts = normalize_options(ts, options, token, list(pks), list(parts))
    arrow = pa.schema([pa.field(c.name, c.type.to_arrow(), nullable=c.type.nullable) for c in columns])
    try:
        base = new_schema(arrow, partition_keys=parts, primary_keys=pks, options=options, comment=comment)
    except PaimonLabError as e:
        raise ts.error(str(e), token) from None
    counter = iter(range(1 << 30))
    fields = []
    for c in columns:
        fid = next(counter)
        dtype = T.assign_field_ids(c.type, counter)
        if c.name in pks:
            dtype = dtype.copy(False)
        fields.append(T.DataField(fid, c.name, dtype, c.comment))
    schema = replace(base, fields=tuple(fields), highest_field_id=T.max_field_id(fields),
                     options={**base.options, **(raw_options or {})})
    if schema.primary_keys:
        try:
            KeyValueLayout(schema)
            merge_function_for(schema)
        except PaimonLabError as e:
            raise ts.error(str(e), token) from None
    return schema


def create_paimon_table(ts: TokenStream, entry, db: str, name: str, columns: list[ColumnDef], pks, parts,
                        options: dict[str, str], comment: str | None, token, raw_options=None):
    """Create a Paimon table in catalog ``entry`` (errors positioned at ``token``)."""
    schema = build_schema(ts, columns, pks, parts, options, comment, token, raw_options)
    try:
        return entry.catalog.create_table(f"{db}.{name}", schema)
    except TableAlreadyExistError:
        raise ts.error(f"Table '{entry.name}.{db}.{name}' already exists", token) from None
    except PaimonLabError as e:
        raise ts.error(str(e), token) from None

"""Flink's ``'connector' = 'datagen'`` source as a deterministic generator.

Options follow Flink: ``rows-per-second`` (default 10000), ``number-of-rows`` (bounds the source),
``fields.<f>.kind`` = random (default) | sequence, ``fields.<f>.min/max`` (numbers),
``fields.<f>.length`` (strings/bytes, default 100), ``fields.<f>.start/end`` (sequence, bounds
the source too), ``fields.<f>.null-rate``. Random values come from a seeded generator (session
setting ``datagen.seed``, default 0), so a script produces the same rows every run.
"""

from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa

from paimon_lab.core import types as T
from paimon_lab.sql.errors import SqlError

_INT_RANGES = {"TINYINT": (-128, 127), "SMALLINT": (-32768, 32767), "INT": (-2**31, 2**31 - 1),
               "BIGINT": (-2**63, 2**63 - 1)}


@dataclass
class DatagenSpec:
    name: str
    fields: list[T.DataField]
    options: dict[str, str]

    @property
    def schema(self) -> pa.Schema:
        return T.arrow_schema(self.fields)

    def opt(self, field: str, key: str, default=None):
        return self.options.get(f"fields.{field}.{key}", default)

    @property
    def rows_per_second(self) -> int:
        return int(self.options.get("rows-per-second", 10000))

    def bound(self) -> int | None:
        """Rows the source produces before it ends (None: unbounded)."""
        out = None
        if "number-of-rows" in self.options:
            out = int(self.options["number-of-rows"])
        for f in self.fields:
            if self.opt(f.name, "kind", "random").lower() == "sequence":
                start, end = self.opt(f.name, "start"), self.opt(f.name, "end")
                if start is None or end is None:
                    raise SqlError(f"datagen field '{f.name}' of kind sequence needs 'fields.{f.name}.start' "
                                   f"and 'fields.{f.name}.end'")
                n = int(end) - int(start) + 1
                out = n if out is None else min(out, n)
        return out

    def generate(self, count: int, seed: int = 0) -> pa.Table:
        base = zlib.crc32(self.name.encode()) ^ (seed * 2654435761 & 0xFFFFFFFF)
        arrays = []
        for i, f in enumerate(self.fields):
            rng = np.random.default_rng([base, i])
            arrays.append(self._column(f, count, rng))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _column(self, f: T.DataField, n: int, rng: np.random.Generator) -> pa.Array:
        t = f.type
        target = t.to_arrow()
        kind = self.opt(f.name, "kind", "random").lower()
        if kind == "sequence":
            start = int(self.opt(f.name, "start"))
            values = np.arange(start, start + n)
            if t.root in ("CHAR", "VARCHAR"):
                return pa.array([str(v) for v in values], target)
            return pa.array(values).cast(target)
        if kind != "random":
            raise SqlError(f"datagen field '{f.name}': unknown kind '{kind}' (random or sequence)")
        root = t.root
        if root in _INT_RANGES:
            lo, hi = _INT_RANGES[root]
            lo = int(self.opt(f.name, "min", lo))
            hi = int(self.opt(f.name, "max", hi))
            values = pa.array(rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)).cast(target)
        elif root in ("FLOAT", "DOUBLE", "DECIMAL"):
            lo = float(self.opt(f.name, "min", 0))
            hi = float(self.opt(f.name, "max", 1000))
            raw = rng.uniform(lo, hi, size=n)
            if root == "DECIMAL":
                q = Decimal(1).scaleb(-t.scale)
                values = pa.array([Decimal(str(v)).quantize(q) for v in raw], target)
            else:
                values = pa.array(raw).cast(target)
        elif root == "BOOLEAN":
            values = pa.array(rng.integers(0, 2, size=n).astype(bool))
        elif root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            default = 100 if t.length is None or t.length >= 100 else t.length
            length = int(self.opt(f.name, "length", default))
            digits = rng.integers(0, 16, size=(n, length))
            chars = np.array(list("0123456789abcdef"))[digits]
            texts = ["".join(row) for row in chars]
            values = pa.array([s.encode() for s in texts] if root in ("BINARY", "VARBINARY") else texts, target)
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME"):
            past = int(self.opt(f.name, "max-past", 0) or 0)
            now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            offs = rng.integers(0, past + 1, size=n) if past else np.zeros(n, dtype=np.int64)
            stamps = [now - dt.timedelta(milliseconds=int(o)) for o in offs]
            if root == "DATE":
                values = pa.array([s.date() for s in stamps], target)
            elif root == "TIME":
                values = pa.array([s.time().replace(microsecond=0) for s in stamps]).cast(target)
            else:
                values = pa.array(stamps, pa.timestamp("us")).cast(target, safe=False)
        else:
            values = pa.nulls(n, target)
        rate = float(self.opt(f.name, "null-rate", 0) or 0)
        if rate > 0 and n:
            mask = rng.random(n) < rate
            values = pa.array([None if m else v for m, v in zip(mask, values.to_pylist())], target)
        return values

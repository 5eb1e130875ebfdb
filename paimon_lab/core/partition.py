"""Partitions: their binary-row form in manifests and their Hive-style directory names."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Sequence

from paimon_lab.core import binary_row
from paimon_lab.core.types import DataField

_ESCAPE = set("\"#%'*/:=?\\{}[]^")


def escape_path_name(text: str) -> str:
    """Hive/Paimon escaping of a partition name or value: special characters become %XX."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE or ord(c) < 32 or ord(c) == 127 else c for c in text)


def unescape_path_name(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and i + 3 <= len(text):
            try:
                out.append(chr(int(text[i + 1:i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(text[i])
        i += 1
    return "".join(out)


def java_float_string(value: float, single: bool = False) -> str:
    """Java's Double.toString (Float.toString if ``single``): shortest round-trip digits,
    plain between 1e-3 and 1e7, else computerized scientific notation like ``1.0E20``."""
    import numpy as np

    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    v = np.float32(value) if single else np.float64(value)
    if v == 0:
        return "-0.0" if np.signbit(v) else "0.0"
    if 1e-3 <= abs(float(v)) < 1e7:
        text = np.format_float_positional(v, unique=True, trim="0")
        return text
    mantissa, exponent = np.format_float_scientific(v, unique=True, trim="0").split("e")
    return f"{mantissa}E{int(exponent)}"


def _legacy_timestamp(value: dt.datetime) -> str:
    """Java LocalDateTime.toString(): seconds and fraction only when non-zero, fraction in 3-digit groups."""
    value = value.replace(tzinfo=None)
    nanos = value.microsecond * 1000 + getattr(value, "nanosecond", 0)
    return value.strftime("%Y-%m-%dT") + java_clock_text(value.hour, value.minute, value.second, nanos)


def java_clock_text(hour: int, minute: int, second: int, nanos: int) -> str:
    """LocalTime.toString(): seconds only if non-zero (or a fraction follows), fraction in groups of 3."""
    text = f"{hour:02d}:{minute:02d}"
    if second or nanos:
        text += f":{second:02d}"
    if nanos:
        if nanos % 1_000_000 == 0:
            text += f".{nanos // 1_000_000:03d}"
        elif nanos % 1000 == 0:
            text += f".{nanos // 1000:06d}"
        else:
            text += f".{nanos:09d}"
    return text


def value_to_partition_string(value: Any, field: DataField, default_name: str, legacy: bool = True) -> str:
    """The text Paimon puts after ``name=`` in a partition directory (before escaping)."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return default_name
    root = field.type.root
    if isinstance(value, bool):
        return "true" if value else "false"
    if root in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), single=root == "FLOAT")
    if root == "DATE":
        if legacy:
            return str((value - dt.date(1970, 1, 1)).days)
        return value.isoformat()
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if root == "TIMESTAMP_LTZ" and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        if legacy:
            return _legacy_timestamp(value)
        precision = field.type.precision
        text = value.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S")
        if precision:
            text += f".{value.microsecond:06d}"[: precision + 1] if precision <= 6 else f".{value.microsecond:06d}000"
        return text
    if root == "TIME":
        if legacy:
            return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
        return value.strftime("%H:%M:%S")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class PartitionCodec:
    """Converts partition values between Python tuples, binary rows and directory paths."""

    def __init__(self, fields: Sequence[DataField], default_name: str, legacy: bool = True):
        self.fields = list(fields)
        self.types = [f.type for f in fields]
        self.default_name = default_name
        self.legacy = legacy
        self._decoded: dict[bytes, tuple] = {}

    def to_bytes(self, values: Sequence[Any]) -> bytes:
        return binary_row.serialize(list(values), self.types)

    def from_bytes(self, data: bytes) -> tuple:
        got = self._decoded.get(data)
        if got is None:
            got = tuple(binary_row.deserialize(data, self.types))
            self._decoded[data] = got
        return got

    def to_dict(self, data: bytes) -> dict[str, Any]:
        return dict(zip((f.name for f in self.fields), self.from_bytes(data)))

    def path(self, values: Sequence[Any]) -> str:
        """``k1=v1/k2=v2`` (empty for an unpartitioned table)."""
        return "/".join(
            f"{escape_path_name(f.name)}="
            f"{escape_path_name(value_to_partition_string(v, f, self.default_name, self.legacy))}"
            for f, v in zip(self.fields, values))

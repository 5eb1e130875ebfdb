"""Values rendered as Java Paimon renders them in system tables: ``Arrays.toString``, ``TreeMap``,
Jackson JSON, ``LocalDateTime``/``Instant`` text."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterable


from paimon_lab.core.partition import java_clock_text, java_float_string

if TYPE_CHECKING:
    from paimon_lab.core.types import DataType


# ---------------------------------------------------------------------------------- Java-style text

def nanos(value) -> int:
    return value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)


def naive_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def java_local_datetime(value: dt.datetime) -> str:
    """LocalDateTime.toString() (also Paimon's Timestamp.toString())."""
    value = naive_utc(value)
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}T" + \
        java_clock_text(value.hour, value.minute, value.second, nanos(value))


def _java_instant(value: dt.datetime) -> str:
    """Instant.toString(): always seconds, fraction in groups of 3, 'Z'."""
    value = naive_utc(value)
    fraction = nanos(value)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if fraction:
        text += java_clock_text(0, 0, 1, fraction)[8:]
    return text + "Z"


def plain_decimal(value: Decimal) -> str:
    return format(value, "f")


def _scalar_text(value: Any, dtype: "DataType") -> str | None:
    """Text shared by the internal and external renderings (None: type-specific)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    root = dtype.root
    if root in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), single=root == "FLOAT")
    if isinstance(value, Decimal):
        return plain_decimal(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()  # Java prints byte[] identities; hex is the readable stand-in
    if isinstance(value, (str, int)) and root not in ("DATE", "TIME"):
        return str(value)
    return None


def external_text(value: Any, dtype: "DataType") -> str:
    """How Java prints a value converted to its external class (partition and key columns)."""
    text = _scalar_text(value, dtype)
    if text is not None:
        return text
    root = dtype.root
    if root == "DATE":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if root == "TIME":
        return java_clock_text(value.hour, value.minute, value.second, nanos(value))
    if root == "TIMESTAMP_LTZ":
        return _java_instant(value)
    if root == "TIMESTAMP":
        return java_local_datetime(value)
    return str(value)


def internal_text(value: Any, dtype: "DataType") -> str:
    """How Java prints a value of its internal class (file min/max statistics)."""
    text = _scalar_text(value, dtype)
    if text is not None:
        return text
    root = dtype.root
    if root == "DATE":  # int days since epoch
        return str((value - dt.date(1970, 1, 1)).days) if isinstance(value, dt.date) else str(value)
    if root == "TIME":  # int millis of day
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return java_local_datetime(value)
    return str(value)


def java_duration(seconds: float) -> str:
    """``java.time.Duration.toString()``: ``PT1H30M``, ``PT0.5S``, ``PT0S`` (hours, minutes and
    seconds; the fraction without trailing zeros)."""
    nanos_total = round(seconds * 1_000_000_000)
    sign = "-" if nanos_total < 0 else ""
    whole, frac = divmod(abs(nanos_total), 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = "PT" + (f"{sign}{hours}H" if hours else "") + (f"{sign}{minutes}M" if minutes else "")
    if secs or frac or out == "PT":
        out += f"{sign}{secs}" + (f".{frac:09d}".rstrip("0") if frac else "") + "S"
    return out


def java_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def java_map(pairs: dict[str, str]) -> str:
    """TreeMap<String, ?>.toString(): keys sorted."""
    return "{" + ", ".join(f"{k}={pairs[k]}" for k in sorted(pairs)) + "}"


def flat_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def jackson_pretty(obj: Any, indent: int = 0) -> str:
    """Jackson's default pretty printer (``"key" : value``, ``[ a, b ]``, ``{ }``)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{ }"
        inner = ",\n".join(f"{pad}  {json.dumps(k, ensure_ascii=False)} : {jackson_pretty(v, indent + 1)}"
                           for k, v in obj.items())
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in obj) + " ]"
    return json.dumps(obj, ensure_ascii=False)

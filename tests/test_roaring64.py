"""Java ``Roaring64Bitmap`` serialization (the ``rbm64`` aggregate's format): round trips over
every ART node and container kind, and bytes Java wrote. Against Java Paimon both ways:
tests/java/test_java_aggregate_functions.py."""

from __future__ import annotations

import base64
import struct

import numpy as np
import pytest

from paimon_lab.core.roaring64 import deserialize_roaring64, serialize_roaring64
from paimon_lab.errors import DataValidationError

# Java Paimon 0.9's FieldRoaringBitmap64Agg output: {1 << 20} then {5} (the second key's leaf and
# container come after the first's); 17 high keys (1..17) then {3} (high key 0 lands in slot 17
# of a Node48); {0, 1, 5, 6, 9, 10} then {2, 11} (one run container).
JAVA_LATER_LOWER_KEY = base64.b64decode(
    "AQIAAAAAAAAAAAIABQAAAAAAAAAQAAQAAAAAAAAAAAABAAAAAAAAAAQAAAAAAAAAABAAAAAAAAAAAAEAAAD+AgAAAAECAQAA"
    "AAAAAQIBAAAABQACAAAAAAAAAAAAAAABAAAA")
JAVA_NODE48 = base64.b64decode(
    "ARIAAAAAAAAAAhIABQAAAAAABgUEAwIBABEODQwLCgkIB////////xAP" + "/" * 309
    + "wQAAAAAAAAAAAARAAAAAAAAAAQAAAAAAAAAAAEAAAAAAAAAAAQAAAAAAAAAAAIBAAAAAAAAAAQAAAAAAAAAAAMCAAAAAAAAA"
    + "AQAAAAAAAAAAAQDAAAAAAAAAAQAAAAAAAAAAAUEAAAAAAAAAAQAAAAAAAAAAAYFAAAAAAAAAAQAAAAAAAAAAAcGAAAAAAAAA"
    + "AQAAAAAAAAAAAgHAAAAAAAAAAQAAAAAAAAAAAkIAAAAAAAAAAQAAAAAAAAAAAoJAAAAAAAAAAQAAAAAAAAAAAsKAAAAAAAAA"
    + "AQAAAAAAAAAAAwLAAAAAAAAAAQAAAAAAAAAAA0MAAAAAAAAAAQAAAAAAAAAAA4NAAAAAAAAAAQAAAAAAAAAAA8OAAAAAAAAA"
    + "AQAAAAAAAAAABAPAAAAAAAAAAQAAAAAAAAAABEQAAAAAAAAAAEAAAD+EwAAAAECAQAAAAAAAQIBAAAAAAABAgEAAAAAAAECA"
    + "QAAAAAAAQIBAAAAAAABAgEAAAAAAAECAQAAAAAAAQIBAAAAAAABAgEAAAAAAAECAQAAAAAAAQIBAAAAAAABAgEAAAAAAAECA"
    + "QAAAAAAAQIBAAAAAAABAgEAAAAAAAECAQAAAAAAAQIBAAAAAAABAgEAAAADAAASAAAAAAAAAAAAAAARAAAA"
)
JAVA_RUN = base64.b64decode(
    "AQEAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAQAAAP4BAAAAAQAIAAAAAwAAAAIABQABAAkAAgABAAAAAAAAAAAAAAAAAAAA")


def _layout(data: bytes) -> tuple[list[int], list[int]]:
    """The ART node types (depth first) and the container types of serialized bytes."""
    body = {0: 4, 1: 16, 2: 256, 3: 32, 4: 14}
    pos, nodes, pending = 9, [], 1
    while pending:
        kind, count, plen = struct.unpack_from("<BHB", data, pos)
        nodes.append(kind)
        pos += 4 + plen + body[kind]
        pending += -1 + (count if kind != 4 else 0)
    (levels,) = struct.unpack_from("<i", data, pos)
    pos += 4
    kinds = []
    for _ in range(levels):
        (size,) = struct.unpack_from("<i", data, pos + 1)
        pos += 5
        for _ in range(size):
            if data[pos] == 0:
                pos += 1
                continue
            kind, card = struct.unpack_from("<Bi", data, pos + 1)
            kinds.append(kind)
            pos += 6
            if kind == 0:
                pos += 2 + 4 * struct.unpack_from("<H", data, pos)[0]
            else:
                pos += 8192 if kind == 1 else 2 * card
    assert pos + 16 == len(data)
    return nodes, kinds


def _round_trip(values) -> bytes:
    v = np.unique(np.asarray(values, dtype=np.uint64))
    data = serialize_roaring64(v)
    assert np.array_equal(deserialize_roaring64(data), v)
    return data


def test_empty_bitmap():
    assert serialize_roaring64(np.empty(0, np.uint64)) == b"\x00"
    assert deserialize_roaring64(b"\x00").tolist() == []


def test_small_bitmap_bytes():
    data = _round_trip([1, 2, 1 << 40])
    assert data.hex() == (
        "01" "0200000000000000"
        "00020002" "0000" "00000100"  # Node4, 2 children, prefix 00 00, child keys 0 and 1
        "04000000" "000000000000" "0000000000000000"
        "04000000" "000001000000" "0100000000000000"
        "01000000" "fe" "02000000"
        "01" "02" "02000000" "01000200" "01" "02" "01000000" "0000"
        "0200000000000000" "00000000" "01000000")


@pytest.mark.parametrize("n,kind", [(3, 0), (10, 1), (40, 2), (200, 3)])
def test_every_node_kind(n, kind):
    nodes, _ = _layout(_round_trip(np.arange(n, dtype=np.uint64) << np.uint64(16)))
    assert nodes[0] == kind and nodes.count(4) == n


def test_deep_tree_of_random_keys():
    rng = np.random.default_rng(7)
    values = np.r_[rng.integers(0, 2**63, 3000, dtype=np.uint64) * np.uint64(2),
                   np.array([0, 2**64 - 1, 2**63], np.uint64), rng.integers(0, 1 << 24, 3000, dtype=np.uint64)]
    nodes, _ = _layout(_round_trip(values))
    assert {0, 1, 2, 3, 4} <= set(nodes)


def test_container_kinds():
    runs = np.arange(1000)                      # one run
    array = np.arange(0, 4000, 3) + (1 << 16)   # 1334 spread values
    bitmap = np.arange(0, 65536, 2) + (2 << 16)  # 32768 values, no runs
    _, kinds = _layout(_round_trip(np.r_[runs, array, bitmap]))
    assert kinds == [0, 2, 1]


def test_reads_java_layouts():
    assert deserialize_roaring64(JAVA_LATER_LOWER_KEY).tolist() == [5, 1 << 20]
    assert deserialize_roaring64(JAVA_NODE48).tolist() == [3] + [k << 16 for k in range(1, 18)]
    assert _layout(JAVA_NODE48)[0][0] == 2
    run = [0, 1, 2, 5, 6, 9, 10, 11]
    assert deserialize_roaring64(JAVA_RUN).tolist() == run
    assert serialize_roaring64(np.array(run, np.uint64)) == JAVA_RUN


@pytest.mark.parametrize("data,match", [
    (b"", "truncated"), (b"\x02", "starts with 2"), (b"\x00\x00", "after its end"),
    (serialize_roaring64(np.array([1, 2], np.uint64))[:-3], "truncated"),
    (b"\x01" + struct.pack("<q", 1) + b"\x09\x00\x00\x00", "bad ART node"),
])
def test_bad_bytes_are_refused(data, match):
    with pytest.raises(DataValidationError, match=match):
        deserialize_roaring64(data)

"""Consumers: ``consumer/consumer-ID`` files record the next snapshot a streaming reader needs,
and snapshot expiration keeps every snapshot from the smallest of them on."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paimon_lab.errors import CorruptFileError, PaimonLabError
from paimon_lab.io.file_io import join

if TYPE_CHECKING:
    from paimon_lab.store.file_store import FileStore


@dataclass(frozen=True)
class Consumer:
    consumer_id: str
    next_snapshot: int


class ConsumerManager:
    def __init__(self, store: "FileStore"):
        self.store = store
        self.dir = join(store.metadata_path, "consumer")

    def path(self, consumer_id: str) -> str:
        return join(self.dir, f"consumer-{consumer_id}")

    def get(self, consumer_id: str) -> Consumer | None:
        try:
            text = self.store.file_io.read_text(self.path(consumer_id))
        except FileNotFoundError:
            return None
        try:
            return Consumer(consumer_id, int(json.loads(text)["nextSnapshot"]))
        except (ValueError, KeyError, TypeError):
            raise CorruptFileError(f"Consumer file {self.path(consumer_id)} is not valid") from None

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        if not consumer_id or "/" in consumer_id:
            raise PaimonLabError(f"Invalid consumer id '{consumer_id}'")
        self.store.file_io.write_bytes(self.path(consumer_id), json.dumps({"nextSnapshot": next_snapshot}).encode())

    def delete(self, consumer_id: str) -> None:
        self.store.file_io.delete(self.path(consumer_id))

    def list(self) -> dict[str, Consumer]:
        """All consumers; with 'consumer.expiration-time', ones idle longer than that are dropped."""
        out = {}
        expiry = self.store.schema.core.get("consumer.expiration-time")
        now = int(time.time() * 1000)
        for info in self.store.file_io.list_dir(self.dir):
            name = info.base_name
            if not name.startswith("consumer-"):
                continue
            if expiry is not None and info.mtime_ns is not None and now - info.mtime_ns // 1_000_000 > expiry:
                self.store.file_io.delete(join(self.dir, name))
                continue
            c = self.get(name[len("consumer-"):])
            if c is not None:
                out[c.consumer_id] = c
        return out

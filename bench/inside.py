"""Measurements a system takes inside a runtime of its own (Java Paimon's JVM), see
:meth:`bench.systems.System.inside`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Inside:
    """Measurements a system took inside its own runtime during one run: the sum over its timed
    operations of seconds and CPU seconds, the highest peak RSS, the RSS before the first one."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    rss_before: int | None = None
    peak_rss: int | None = None
    peak_is_op_only: bool = True
    heap_peak: int | None = None  # a JVM's heap high-water mark (sum of its heap pools' peaks)

    def add(self, m: dict) -> None:
        self.seconds += m["seconds"]
        self.cpu_seconds += m["cpu_seconds"]
        if self.rss_before is None and m.get("rss_before", -1) >= 0:
            self.rss_before = m["rss_before"]
        if m.get("peak_rss", -1) >= 0:
            self.peak_rss = max(self.peak_rss or 0, m["peak_rss"])
        self.peak_is_op_only = self.peak_is_op_only and bool(m.get("peak_is_op_only"))
        if m.get("heap_peak") is not None:
            self.heap_peak = max(self.heap_peak or 0, m["heap_peak"])

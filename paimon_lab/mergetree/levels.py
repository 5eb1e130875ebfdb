"""The levels of one bucket's LSM tree: sorted runs by level.

Level 0 holds freshly flushed files, each its own sorted run (newest first). Every higher level
is one sorted run: its files do not overlap in key range. Compaction merges runs into a higher
level (see :mod:`.compact_strategy`); the highest level holds the oldest, fully merged data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from paimon_lab.core.manifest import DataFileMeta

__all__ = ["SortedRun", "Levels", "key_sections"]


def key_sections(files: Sequence[DataFileMeta], key_types: Sequence) -> list[list[int]] | None:
    """Indices of ``files`` grouped into sections by key range, sections in key order (Java's
    IntervalPartition): a file shares no key with any file of another section, so a section of
    one file needs no merge. Inside a section the indices keep their order in ``files``. None
    when the key ranges cannot be compared (undecodable or NULL bounds)."""
    if len(files) <= 1:
        return [list(range(len(files)))]
    try:
        ranges = [f.key_range(key_types) for f in files]
    except Exception:  # noqa: BLE001 - undecodable keys: nothing is known
        return None
    if any(None in lo or None in hi for lo, hi in ranges):
        return None
    try:
        order = sorted(range(len(files)), key=lambda i: ranges[i][0])
        out, high = [[order[0]]], ranges[order[0]][1]
        for i in order[1:]:
            low_i, high_i = ranges[i]
            if high < low_i:
                out.append([i])
                high = high_i
            else:
                out[-1].append(i)
                high = max(high, high_i)
    except TypeError:
        return None
    return [sorted(section) for section in out]


@dataclass
class SortedRun:
    level: int
    files: list[DataFileMeta]

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass
class Levels:
    """Files of one bucket by level."""

    num_levels: int
    level0: list[DataFileMeta] = field(default_factory=list)
    levels: dict[int, list[DataFileMeta]] = field(default_factory=dict)

    @staticmethod
    def of(files: list[DataFileMeta], num_levels: int) -> "Levels":
        lv = Levels(max(num_levels, max((f.level for f in files), default=0) + 1))
        for f in files:
            lv.add(f)
        return lv

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def add(self, f: DataFileMeta) -> None:
        if f.level == 0:
            self.level0.append(f)
            self.level0.sort(key=lambda x: (-x.max_sequence_number, x.file_name))
        else:
            run = self.levels.setdefault(f.level, [])
            run.append(f)
            run.sort(key=lambda x: x.min_key)

    def remove(self, files: list[DataFileMeta]) -> None:
        names = {f.file_name for f in files}
        self.level0 = [f for f in self.level0 if f.file_name not in names]
        for lvl in list(self.levels):
            self.levels[lvl] = [f for f in self.levels[lvl] if f.file_name not in names]
            if not self.levels[lvl]:
                del self.levels[lvl]

    def update(self, before: list[DataFileMeta], after: list[DataFileMeta]) -> None:
        self.remove(before)
        for f in after:
            self.add(f)

    def all_files(self) -> list[DataFileMeta]:
        return list(self.level0) + [f for lvl in sorted(self.levels) for f in self.levels[lvl]]

    def sorted_runs(self) -> list[SortedRun]:
        """Runs from newest to oldest: each level-0 file, then each non-empty level."""
        runs = [SortedRun(0, [f]) for f in self.level0]
        runs += [SortedRun(lvl, list(self.levels[lvl])) for lvl in sorted(self.levels) if self.levels[lvl]]
        return runs

    def non_empty_highest_level(self) -> int:
        if self.levels:
            return max(self.levels)
        return 0 if self.level0 else -1

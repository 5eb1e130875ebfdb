"""The levels of one bucket's LSM tree and the universal compaction strategy over them.

Level 0 holds freshly flushed files, each its own sorted run (newest first). Every higher level
is one sorted run: its files do not overlap in key range. Compaction merges runs into a higher
level; the highest level holds the oldest, fully merged data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from paimon_lab.core.manifest import DataFileMeta


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


@dataclass
class CompactUnit:
    output_level: int
    files: list[DataFileMeta]


class UniversalCompaction:
    """Paimon's universal compaction (after RocksDB's): pick runs by size amplification, by size
    ratio, or because there are too many runs."""

    def __init__(self, max_size_amp_percent: int, size_ratio: int, num_run_trigger: int):
        self.max_size_amp = max_size_amp_percent
        self.size_ratio = size_ratio
        self.num_run_trigger = num_run_trigger

    def pick(self, num_levels: int, runs: list[SortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        if len(runs) < self.num_run_trigger:
            return None
        unit = self._size_amp(max_level, runs) or self._size_ratio(max_level, runs, 1, False)
        if unit is None and len(runs) > self.num_run_trigger:
            unit = self._size_ratio(max_level, runs, len(runs) - self.num_run_trigger + 1, True)
        return unit

    def _size_amp(self, max_level: int, runs: list[SortedRun]) -> CompactUnit | None:
        candidate = sum(r.size for r in runs[:-1])
        if candidate * 100 > self.max_size_amp * runs[-1].size:
            return CompactUnit(max_level, [f for r in runs for f in r.files])
        return None

    def _size_ratio(self, max_level: int, runs: list[SortedRun], count: int, force: bool) -> CompactUnit | None:
        candidate = sum(r.size for r in runs[:count])
        for run in runs[count:]:
            if candidate * (100.0 + self.size_ratio) / 100.0 < run.size:
                break
            candidate += run.size
            count += 1
        return self._create(runs, max_level, count) if force or count > 1 else None

    @staticmethod
    def _create(runs: list[SortedRun], max_level: int, count: int) -> CompactUnit | None:
        if count <= 0:
            return None
        if count >= len(runs):
            output = max_level
            count = len(runs)
        else:
            output = max(0, runs[count].level - 1)
        if output == 0:
            # Never output to level 0: pull in runs until a non-zero level is reached.
            for i in range(count, len(runs)):
                count += 1
                if runs[i].level != 0:
                    output = runs[i].level
                    break
        if count >= len(runs):
            output = max_level
        files = [f for r in runs[:count] for f in r.files]
        if len(files) <= 1 and (not files or files[0].level == output):
            return None
        return CompactUnit(output, files)


def force_level0_unit(levels: Levels) -> CompactUnit | None:
    """Compact every level-0 file into the upper levels (used by the lookup changelog producer
    and deletion vectors, which must not leave data in level 0 after a commit)."""
    runs = levels.sorted_runs()
    n0 = sum(1 for r in runs if r.level == 0)
    if n0 == 0:
        return None
    return UniversalCompaction._create(runs, levels.max_level, n0) or CompactUnit(
        levels.max_level, [f for r in runs for f in r.files])

"""Which sorted runs of a bucket to compact: Paimon's universal compaction strategy."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.mergetree.levels import Levels, SortedRun

__all__ = ["CompactUnit", "UniversalCompaction", "force_level0_unit"]


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


def force_level0_unit(levels: Levels, strategy: UniversalCompaction,
                      keep: frozenset[str] = frozenset()) -> CompactUnit | None:
    """Compact every level-0 file into the upper levels (used by the lookup changelog producer,
    deletion vectors and first-row, which must not leave data in level 0 after a commit), as
    Java's ForceUpLevel0Compaction: the ``strategy``'s own pick first; else the level-0 runs,
    taking in the next runs while the size ratio holds. Level-0 files named in ``keep`` (the
    newest ones) stay where they are."""
    runs = [r for r in levels.sorted_runs() if not (r.level == 0 and r.files[0].file_name in keep)]
    unit = strategy.pick(levels.num_levels, runs)
    if unit is not None:
        return unit
    n0 = sum(1 for r in runs if r.level == 0)
    if n0 == 0:
        return None
    return strategy._size_ratio(levels.max_level, runs, n0, True) or \
        CompactUnit(levels.max_level, [f for r in runs for f in r.files])

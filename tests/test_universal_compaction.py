"""Universal compaction picks what Java's UniversalCompaction (Paimon 0.9/1.0) picks, on the
default options (size amplification 200%, size ratio 1, trigger 5 sorted runs)."""

from types import SimpleNamespace

from paimon_lab.mergetree.compact_strategy import UniversalCompaction
from paimon_lab.mergetree.levels import SortedRun

MB = 1 << 20


def _runs(*sizes_mb, level=0):
    """Level-0 runs, newest first, one file each of the given sizes."""
    return [SortedRun(level, [SimpleNamespace(file_size=int(s * MB), level=level, file_name=f"f{i}")])
            for i, s in enumerate(sizes_mb)]


def _default():
    return UniversalCompaction(max_size_amp_percent=200, size_ratio=1, num_run_trigger=5)


def test_wide_cdc_buckets_stay_uncompacted_like_java():
    # One bucket of bench/workloads/wide_cdc.py after the bulk load and 4 CDC commits (file
    # sizes of a 1M-row build): 5 runs is not more than the trigger, the 4 newer runs are ~100%
    # of the oldest (not over 200%), and the newest run is smaller than the next (size ratio 1).
    assert _default().pick(10, _runs(4.03, 4.83, 6.52, 2.71, 17.95)) is None


def test_a_sixth_run_compacts_every_level0_run_to_the_top():
    unit = _default().pick(10, _runs(3.9, 4.03, 4.83, 6.52, 2.71, 17.95))
    # forced by the run count; the output level would be 0, so every level-0 run is taken
    assert unit is not None and unit.output_level == 9 and len(unit.files) == 6


def test_size_amplification_over_200_percent_compacts_everything():
    unit = _default().pick(10, _runs(8, 8, 8, 8, 15))
    assert unit is not None and unit.output_level == 9 and len(unit.files) == 5


def test_size_ratio_takes_the_newer_runs_while_they_add_up():
    # 1 + 1 >= 2 * 0.99..., 1 + 1 + 2 >= 4: the four newest are picked; 16 is too big to join
    unit = _default().pick(10, [*_runs(1, 1, 2, 4), *_runs(16, level=5)])
    assert unit is not None and len(unit.files) == 4 and unit.output_level == 4

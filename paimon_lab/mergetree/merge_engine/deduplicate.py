"""The ``deduplicate`` merge engine (the default): the last row of each key wins."""

from __future__ import annotations

from paimon_lab.mergetree.merge_engine.base import MergeFunction

__all__ = ["DeduplicateMergeFunction"]


class DeduplicateMergeFunction(MergeFunction):
    """The last row of each key wins, with its kind ('-D' last means the key is deleted)."""

    engine = "deduplicate"

    def _merge(self, kv, keys, groups, kinds, retract):
        return kinds[groups.lasts], {}

"""Which files of a compaction unit are moved by metadata and which are rewritten (Java's
``MergeTreeCompactTask`` with its rewriter's ``upgradeStrategy``).

A unit's files are grouped into sections by key range (:func:`key_sections`). A file alone in its
section shares no key with the rest of the unit; unless it is small, it is *upgraded*: written
to the output level under the same name. Small files and sections of overlapping files are
rewritten together, up to the next upgraded file. Three rewriters decide how an upgrade is done:

- plain tables: by metadata only;
- ``changelog-producer`` = full-compaction: by metadata; into the top level the file's rows are
  read too, as they become +I changelog;
- lookup tables (``changelog-producer`` = lookup, deletion vectors, the first-row engine,
  ``force-lookup``): an upper-level file by metadata only. A level-0 file's keys are looked up
  in the levels above (their changelog, and the deletion vectors of their older rows) and the file is moved by
  metadata where its rows stay what a merge would give: into the top level (nothing above it to
  merge with), or for the deduplicate engine without ``sequence.field`` (the newest row wins
  whatever is above). Otherwise, and for a file with deletes in a deletion-vector table (its
  deletes must be dropped), it is rewritten.

A file with deletes (or no delete count) is never moved into the top level: it is rewritten to
drop them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paimon_lab.core.manifest import DataFileMeta
from paimon_lab.core.options import CoreOptions
from paimon_lab.mergetree.levels import key_sections

__all__ = ["CHANGELOG", "REWRITE", "UPGRADE", "UpgradeRules", "compaction_steps"]

UPGRADE = "upgrade"        # new level in the metadata, nothing read
CHANGELOG = "changelog"    # new level in the metadata; the rows are read for changelog / deletion vectors
REWRITE = "rewrite"        # merged and written as new files


def _may_hold_deletes(f: DataFileMeta) -> bool:
    return f.delete_row_count is None or f.delete_row_count > 0


@dataclass(frozen=True)
class UpgradeRules:
    """How one table's compaction moves a file that needs no merge (see the module docstring)."""

    rewriter: str          # "plain", "full-compaction" or "lookup"
    max_level: int
    min_size: float        # files under this are rewritten with their neighbours
    dv: bool = False
    keeps_newest: bool = False   # deduplicate without sequence.field: merging changes no newest row

    @staticmethod
    def of(core: CoreOptions, max_level: int) -> UpgradeRules | None:
        """The rules of a table, None where the whole unit is rewritten: the full-compaction
        producer with deletion vectors or the first-row engine (Java's full-compaction rewriter
        does no lookup there; we lift and merge level 0 with the lookup, so nothing is upgraded)."""
        producer, engine = core.get("changelog-producer"), core.get("merge-engine")
        dv = bool(core.get("deletion-vectors.enabled"))
        min_size = core.target_file_size * core.get("compaction.small-file-ratio")
        if producer == "full-compaction":
            if dv or engine == "first-row":
                return None
            return UpgradeRules("full-compaction", max_level, min_size)
        if producer == "lookup" or dv or engine == "first-row" or core.get("force-lookup"):
            return UpgradeRules("lookup", max_level, min_size, dv,
                                engine == "deduplicate" and not core.get("sequence.field"))
        return UpgradeRules("plain", max_level, min_size)

    def upgrade_step(self, f: DataFileMeta, output_level: int) -> str | None:
        """How a file alone in its key range moves to ``output_level`` (None: it is there already)."""
        if f.level == output_level:
            return None
        if output_level == self.max_level and _may_hold_deletes(f):
            return REWRITE     # the top level keeps no deletes
        if self.rewriter == "full-compaction":
            return CHANGELOG if output_level == self.max_level else UPGRADE
        if self.rewriter == "plain" or f.level != 0:
            return UPGRADE
        if self.dv and _may_hold_deletes(f):
            return REWRITE
        if output_level == self.max_level or self.keeps_newest:
            return CHANGELOG
        return REWRITE


def compaction_steps(files: Sequence[DataFileMeta], key_types: Sequence, output_level: int,
                     rules: UpgradeRules | None) -> list[tuple[str, list[DataFileMeta]]] | None:
    """A unit's steps (UPGRADE / CHANGELOG / REWRITE, files), in key order; None: rewrite the
    whole unit (no rules, or key ranges that cannot be compared)."""
    if rules is None:
        return None
    sections = key_sections(files, key_types)
    if sections is None:
        return None
    steps: list[tuple[str, list[DataFileMeta]]] = []
    candidate: list[list[DataFileMeta]] = []   # sections waiting to be rewritten together

    def upgrade(f: DataFileMeta) -> None:
        step = rules.upgrade_step(f, output_level)
        if step is not None:
            steps.append((step, [f]))

    def rewrite() -> None:
        if len(candidate) == 1 and len(candidate[0]) == 1:
            upgrade(candidate[0][0])    # a lone small file: nothing to rewrite it with
        elif candidate:
            steps.append((REWRITE, [f for section in candidate for f in section]))
        candidate.clear()

    for section in sections:
        group = [files[i] for i in section]
        if len(group) > 1 or group[0].file_size < rules.min_size:   # overlapping, or small
            candidate.append(group)
        else:
            rewrite()
            upgrade(group[0])
    rewrite()
    return steps

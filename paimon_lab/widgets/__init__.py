"""Notebook widgets over a Paimon table (ipywidgets + plotly; ``pip install 'paimon-lab[notebook]'``).

Each takes a :class:`~paimon_lab.Table` and *is* a displayable ipywidget (show it as a cell's
last expression or with ``display``)::

    from paimon_lab.widgets import SnapshotBrowser, SnapshotDiff, LsmView, DeletionVectorView, \\
        ManifestExplorer, LiveTail
    SnapshotBrowser(table)              # snapshots & tags; the table as of one; tag / roll back
    SnapshotDiff(table, 1, 3)           # rows, files and counts that changed between two points
    LsmView(table, {"dt": "a"}, 0)      # the LSM tree of a bucket; a slider steps through snapshots
    DeletionVectorView(table)           # deletion vectors drawn, with the keys they delete
    ManifestExplorer(table)             # snapshot -> manifest lists -> manifests -> entries -> files
    LiveTail(table)                     # follow new commits in a background thread

They use only the engine's public API, read rows page by page (``limit=``) and never load a
whole table to draw it.
"""

import paimon_lab.widgets._common  # noqa: F401 - first, so a missing extra is named before a module imports it
from paimon_lab.widgets.deletion_vectors import DeletionVectorView
from paimon_lab.widgets.live_tail import LiveTail
from paimon_lab.widgets.lsm_view import LsmView
from paimon_lab.widgets.manifest_explorer import ManifestExplorer
from paimon_lab.widgets.snapshot_browser import SnapshotBrowser
from paimon_lab.widgets.snapshot_diff import SnapshotDiff, diff

__all__ = ["SnapshotBrowser", "SnapshotDiff", "LsmView", "DeletionVectorView", "ManifestExplorer", "LiveTail",
           "diff"]

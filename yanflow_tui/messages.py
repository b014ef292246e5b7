"""Messages that carry backend results to the UI. They hold domain dataclasses only, never SDK objects."""

from __future__ import annotations

from textual.message import Message

from yanflow_tui.hub import ClusterSnapshot


class ClusterUpdated(Message):
    """A cluster's refresh finished (successfully or not)."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

"""The Queue's columns, declared once: per column its key, header, the job field it shows and how the
table fits it (flexible and down to what floor, the order in which it gives way, justification, min
width, style), the styles of job states, and what the empty filter box says. Pure data on the stdlib
alone: the Queue's renderer (``screens/render/rows.py``), its table (``screens/queue.py``
``COLUMNS``) and the early painter (``earlypaint``, which runs before Textual and Rich are imported)
all read it, so they cannot disagree (``tests/unit/test_queue_columns.py``). A new column: a line
here, and its cell and sort value in ``rows.job_live_cells`` and ``rows.job_sort_values`` (one per
column, in this order); the early painter shows its field's text unless ``earlypaint.TEXTS`` says
otherwise.
"""

from __future__ import annotations

from typing import NamedTuple


class QueueColumn(NamedTuple):
    key: str  # the table's column key (its sort, its header click)
    header: str
    field: str  # the ``Job`` field its cell shows (the snapshot document's key)
    flex: bool = False  # gives up width first (down to its header, or ``floor``) when the terminal is narrow
    floor: int = 0  # a flexible column never shrinks below this
    give_way: int = 0  # 1, 2, ...: hidden in that order when shrinking is not enough; 0: never hidden
    justify: str = "left"  # or "right"
    min_width: int = 0  # also the room kept for live cells (the age), which are not measured ahead
    style: str = ""  # under every cell of the column: words among a colour, "bold" and "dim"


NAME_FLOOR = 16  # a narrow terminal hides REASON, then NODES, then AGE before NAME gets narrower than this
ID_FLOOR = 12  # a long id (a Kubernetes pod's namespace/job/pod) is cut to this, with an ellipsis, before
# it pushes STATE and the columns after it off screen (a Slurm array task, 1234567_[0-5], fits whole)

COLUMNS = (
    QueueColumn("cluster", "CLUSTER", "cluster", style="bold"),
    QueueColumn("id", "ID", "id", flex=True, floor=ID_FLOOR),
    QueueColumn("name", "NAME", "name", flex=True, floor=NAME_FLOOR),
    QueueColumn("user", "USER", "user"),
    QueueColumn("state", "STATE", "state"),
    QueueColumn("gpus", "GPUS", "gpus", justify="right"),
    QueueColumn("nodes", "NODES", "nodes", flex=True, give_way=2),
    QueueColumn("age", "AGE", "submit_time", min_width=4, justify="right", give_way=3),
    QueueColumn("reason", "REASON", "reason", flex=True, give_way=1, style="dim"),
)
KEYS = tuple(column.key for column in COLUMNS)
HEADERS = tuple(column.header for column in COLUMNS)

# A job state's style (by ``JobState`` value) in the STATE column and the header's counts: a colour
# (one of the early painter's ``COLOURS``), "bold", "dim", or a colour and an attribute.
STATE_STYLES = {
    "pending": "yellow",
    "running": "green",
    "completing": "cyan",
    "completed": "dim",
    "failed": "bold red",
    "cancelled": "magenta",
    "unknown": "red",
}


# what the Queue's ``/`` box says while empty (the box, and the cached paint's echo of it: ``earlyecho``)
FILTER_PLACEHOLDER = (
    "filter: words, field:value (cluster id name user state reason node kind gpus nnodes),"
    ' gpus:>4, -negate, "quoted words"'
)

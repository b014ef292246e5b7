"""The work dir that mmengine's Runner writes (MMDetection, the ``mmdet`` template project), read
without mmengine: the scalars its ``LocalVisBackend`` appends to ``<timestamp>/vis_data/scalars.json``
(one JSON object a line: the values, with ``step``; training lines carry ``iter``/``epoch``, a
validation line does not), its checkpoints (``epoch_N.pth``, ``iter_N.pth``) and ``last_checkpoint``
(a text file holding the newest checkpoint's path, which ``--resume`` reads). Plain functions over
text and file names; reading the files is the caller's (``read_work_dir`` for a local folder)."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from yanflow_tui.model import MetricPoint

SCALARS = "scalars.json"
VIS_DATA = "vis_data"
LAST = "last_checkpoint"
CHECKPOINT = re.compile(r"^(epoch|iter)_(\d+)\.pth$")
# what each training line carries besides its values: not curves of their own
NOT_CURVES = frozenset({"step", "epoch", "iter", "time", "data_time", "memory", "eta"})


def scalar_points(lines: Iterable[str]) -> list[MetricPoint]:
    """The points of a ``scalars.json``: a training line's values (group ``training``, at its
    ``step``), a validation line's (no ``iter``: group ``validation``, at its epoch ``step``). Lines
    that do not parse (one being written) and values that are not finite numbers are left out."""
    points = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or not isinstance(row.get("step"), int):
            continue
        group = "training" if "iter" in row else "validation"
        for name, value in row.items():
            if name in NOT_CURVES or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                points.append(MetricPoint(name, row["step"], float(value), group))
    return points


@dataclass(frozen=True)
class WorkDirCheckpoint:
    path: str
    by: str  # "epoch" or "iter"
    number: int
    last: bool = False  # the one ``last_checkpoint`` names


def checkpoints(names: Iterable[str], last_text: str = "") -> list[WorkDirCheckpoint]:
    """The checkpoints among a work dir's file ``names`` (paths), oldest first; ``last_text``: what
    its ``last_checkpoint`` holds (marks that one ``last``, by its file name)."""
    last = os.path.basename(last_text.strip())
    found = []
    for name in names:
        match = CHECKPOINT.match(os.path.basename(name))
        if match:
            base = os.path.basename(name)
            found.append(WorkDirCheckpoint(name, match.group(1), int(match.group(2)), base == last))
    return sorted(found, key=lambda c: (c.by, c.number))


def resume_from(names: Iterable[str], last_text: str = "") -> str | None:
    """The checkpoint to resume from: the one ``last_checkpoint`` names if it is there, else the newest."""
    found = checkpoints(names, last_text)
    chosen = [c for c in found if c.last] or found
    return chosen[-1].path if chosen else None


def is_work_dir_file(relative: str) -> bool:
    """Whether a path under a work dir is one this module reads (``scalars.json``, checkpoints, ``last_checkpoint``)."""
    base = os.path.basename(relative)
    return base in (SCALARS, LAST) or CHECKPOINT.match(base) is not None


def read_work_dir(work_dir: str) -> tuple[list[MetricPoint], list[WorkDirCheckpoint]]:
    """A local work dir's scalars (every run's ``scalars.json``, oldest run first) and checkpoints.
    Blocking file I/O: call from a thread."""
    points: list[MetricPoint] = []
    runs = sorted(d for d in os.listdir(work_dir) if os.path.isfile(os.path.join(work_dir, d, VIS_DATA, SCALARS)))
    for run in runs:
        with open(os.path.join(work_dir, run, VIS_DATA, SCALARS), encoding="utf-8", errors="replace") as f:
            points.extend(scalar_points(f))
    last = os.path.join(work_dir, LAST)
    last_text = open(last, encoding="utf-8").read() if os.path.isfile(last) else ""
    names = [os.path.join(work_dir, n) for n in os.listdir(work_dir)]
    return points, checkpoints(names, last_text)

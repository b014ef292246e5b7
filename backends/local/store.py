"""SQLite store of local jobs in the XDG state dir, shared by every console and CLI on this machine,
and by those of other machines where ``$HOME`` is shared (each job records the host that runs it).

Blocking; the local backend calls it from threads. One connection, serialised by a lock; WAL mode so
a console and a CLI can use it at once. The database file is created 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yanflow_tui.errors import BackendError

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    command TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    gpus INTEGER NOT NULL DEFAULT 0,
    gpu_indices TEXT NOT NULL DEFAULT '',
    cpus INTEGER,
    memory_mb INTEGER,
    submit_time REAL NOT NULL,
    start_time REAL,
    end_time REAL,
    exit_code INTEGER,
    pid INTEGER,
    pid_start TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    host TEXT NOT NULL DEFAULT ''
);
"""
COLUMNS = (
    "id",
    "name",
    "user",
    "kind",
    "spec",
    "command",
    "state",
    "reason",
    "gpus",
    "gpu_indices",
    "cpus",
    "memory_mb",
    "submit_time",
    "start_time",
    "end_time",
    "exit_code",
    "pid",
    "pid_start",
    "cancel_requested",
    "host",
)


@dataclass
class JobRow:
    id: int
    name: str
    user: str
    kind: str
    spec: str
    command: str
    state: str
    reason: str
    gpus: int
    gpu_indices: str
    cpus: int | None
    memory_mb: int | None
    submit_time: float
    start_time: float | None
    end_time: float | None
    exit_code: int | None
    pid: int | None
    pid_start: str | None
    cancel_requested: int
    host: str = ""  # the machine whose console started it ("" in stores older than the column: this one)

    @property
    def indices(self) -> list[int]:
        return [int(i) for i in self.gpu_indices.split(",") if i]

    @property
    def spec_data(self) -> dict[str, Any]:
        return json.loads(self.spec)


class LocalStore:
    def __init__(self, path: Path):
        self.path = path
        if not os.path.lexists(path):  # created 0600 before SQLite opens it; a planted link is refused
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        if path.is_symlink():
            raise BackendError(f"{path} is a symbolic link; the job store must be a plain file")
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=10, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(SCHEMA)
        self._add_host_column()

    def _add_host_column(self) -> None:
        """Stores written before jobs recorded their host get the column, empty for the old rows."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if "host" not in columns:
            try:
                self._db.execute("ALTER TABLE jobs ADD COLUMN host TEXT NOT NULL DEFAULT ''")
            except sqlite3.OperationalError as exc:  # another console added it just now
                if "duplicate column" not in str(exc):
                    raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert(self, **fields: Any) -> int:
        fields.setdefault("submit_time", time.time())
        keys = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        with self._lock:
            cur = self._db.execute(f"INSERT INTO jobs ({keys}) VALUES ({marks})", tuple(fields.values()))
            if cur.lastrowid is None:  # sqlite always gives an INSERT's row id
                raise RuntimeError("the local job store did not return the new job's id")
            return cur.lastrowid

    def update(self, job_id: int, **fields: Any) -> None:
        if not fields:
            return
        assigns = ", ".join(f"{k} = ?" for k in fields if k in COLUMNS)
        with self._lock:
            self._db.execute(f"UPDATE jobs SET {assigns} WHERE id = ?", (*fields.values(), job_id))

    def get(self, job_id: int) -> JobRow | None:
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(COLUMNS)} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return JobRow(*row) if row else None

    def all(self, limit: int = 1000) -> list[JobRow]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM jobs ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [JobRow(*r) for r in rows]

    def active(self) -> list[JobRow]:
        """Pending and running jobs, oldest first (the scheduling order)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM jobs WHERE state IN ('pending', 'running') ORDER BY id"
            ).fetchall()
        return [JobRow(*r) for r in rows]

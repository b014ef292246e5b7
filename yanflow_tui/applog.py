"""The console's own log: ``$XDG_STATE_HOME/yanflow/yanflow.log`` (``locations.app_log_path``), mode
0600, rotated by size, with a redaction filter so no password or token ever reaches it.

Modules log through ``logging.getLogger(__name__)``; ``setup`` sends everything under
``yanflow_tui`` (INFO, DEBUG with ``--debug``) and other libraries' warnings to the file, never to
the terminal: a record on stderr would be drawn over the console. Secrets the console learns at run
time (a typed password, a session token) are registered with ``add_secret`` and replaced verbatim;
common shapes (``password=``, ``"token": ...``, ``Authorization: Bearer ...``, JWTs, kubeconfig key
data) are replaced whatever their source."""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from yanflow_tui.locations import app_log_path, open_private

MAX_BYTES = 1 << 20  # rotate at 1 MiB
BACKUPS = 3  # yanflow.log.1 .. .3
REDACTED = "[redacted]"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_SECRET_KEYS = (
    r"pass(?:word|wd|phrase)?|token|secret|api[_-]?key|access[_-]?key|private[_-]?key|credentials?"
    r"|client[_-]key[_-]data|client[_-]certificate[_-]data|id[_-]token|refresh[_-]token|auth"
)
_PATTERNS = (
    # Authorization: Bearer X / Basic X, in headers or text
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}"), rf"\1 {REDACTED}"),
    # key=value, key: value, "key": "value", 'key': 'value' (a key that names a secret)
    (
        re.compile(rf"(?i)([\"']?\b[\w.-]*(?:{_SECRET_KEYS})\b[\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}}\])]+)"),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), REDACTED),  # JWTs
    (re.compile(r"\bv\d\.(?:public|local)\.[A-Za-z0-9_-]{10,}"), REDACTED),  # PASETO (Determined tokens)
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), REDACTED),
)

_secrets: set[str] = set()
_lock = threading.Lock()
log = logging.getLogger(__name__)


def add_secret(value: str | None) -> None:
    """Never write ``value`` to the log (a password typed at a prompt, a token from a login)."""
    if value and len(value) >= 4:  # shorter ones would blank out ordinary words
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """``text`` with every registered secret and every secret-shaped value replaced."""
    if not text:
        return text
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactFilter(logging.Filter):
    """Renders each record's message (and traceback) once, redacted, before any handler sees it."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = redact(message), ()
        if record.exc_info:
            record.exc_text = redact(record.exc_text or self._formatter.formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A ``RotatingFileHandler`` whose files are opened mode 0600, never through a symlink; a log
    left with wider permissions is narrowed when it is opened."""

    def _open(self) -> io.TextIOWrapper:
        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.fchmod(fd, 0o600)
        except OSError:
            pass
        mode = self.mode if "a" in self.mode else "a"
        return cast(io.TextIOWrapper, os.fdopen(fd, mode, encoding=self.encoding, errors=self.errors))


_installed: logging.Handler | None = None


def setup(debug: bool = False, env: Mapping[str, str] = os.environ) -> Path | None:
    """Send the log to ``app_log_path()``; the path, or None when it cannot be written (then
    nothing is logged at all, and still nothing reaches the terminal)."""
    global _installed
    root = logging.getLogger()
    if _installed is not None:
        root.removeHandler(_installed)
        _installed.close()
        _installed = None
    path = app_log_path(env)
    written: Path | None = path
    handler: logging.Handler
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handler = PrivateRotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", errors="backslashreplace"
        )
    except OSError:
        handler, written = logging.NullHandler(), None
    handler.addFilter(RedactFilter())
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.INFO if debug else logging.WARNING)  # other libraries: their warnings, or more
    logging.getLogger("yanflow_tui").setLevel(logging.DEBUG if debug else logging.INFO)
    logging.captureWarnings(True)  # warnings.warn() goes to the log, not over the screen
    _installed = handler
    return written


def stop() -> None:
    """Close the log (tests; the process's end does it otherwise)."""
    global _installed
    if _installed is not None:
        logging.getLogger().removeHandler(_installed)
        _installed.close()
        _installed = None

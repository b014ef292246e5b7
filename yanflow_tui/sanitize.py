"""Make untrusted cluster text safe to show: strip ANSI escapes and control characters.

Everything a cluster sends (job names, log lines, reasons) passes through here and is then
rendered as plain ``rich.text.Text``, never as markup. The command line's output goes through
``CleanStream`` (``cli.main`` puts one over stdout and stderr): every byte it prints, errors and
names the user typed included, is cleaned at that one point.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO, cast

from yanflow_tui.bytenames import unsurrogate

if TYPE_CHECKING:
    from rich.text import Text

# CSI, OSC (terminated by BEL or ST), DCS-like strings, and other ESC sequences.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC ... BEL/ST (7- or 8-bit)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS/SOS/PM/APC ... ST
    r"|\x1b[ -/]*[0-~]?"  # other escapes: ESC, intermediates, final byte ("ESC ( B", "ESC 7"), or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
# C0/C1 controls (not \t, \n), plus zero-width and bidirectional overrides that can disguise text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def clean(text: str, *, keep_newlines: bool = False) -> str:
    """Return ``text`` with escape sequences and control characters removed.

    Tabs become single spaces. Newlines become spaces unless ``keep_newlines``.
    """
    if not text:
        return ""
    if text.isprintable():  # no ESC, C0/C1, zero-width or bidi characters: nothing to strip (fast path)
        return text
    text = unsurrogate(text)  # a name that was not UTF-8: its bad bytes as \xNN
    text = _ANSI.sub("", text)
    text = text.replace("\t", " ")
    if not keep_newlines:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return _CONTROL.sub("", text)  # the class leaves "\n" alone


def plain(text: str) -> Text:
    """A ``rich.text.Text`` of cleaned text, with markup off."""
    from rich.text import Text

    return Text(clean(text), no_wrap=True, overflow="ellipsis")


def clean_output(text: str) -> str:
    """``text`` for a terminal's stream: escape sequences and control characters removed, its
    newlines and tabs kept."""
    if not text or text.replace("\n", "").isprintable():  # the usual case: nothing to strip
        return text
    return _CONTROL.sub("", _ANSI.sub("", text))  # the class leaves "\t" and "\n" alone


class CleanStream:
    """A text stream that writes ``clean_output`` of everything to ``raw``. ``raw`` is there for our
    own control characters (the ``\r`` of a progress line), never for text."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(clean_output(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:  # flush, isatty, fileno, encoding, buffer...
        return getattr(self.raw, name)


def raw(stream: TextIO) -> TextIO:
    """The stream under a ``CleanStream`` (``stream`` itself when it is not one)."""
    return stream.raw if isinstance(stream, CleanStream) else stream


@contextlib.contextmanager
def clean_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` are ``CleanStream``s for the block (``print`` included)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, CleanStream(raw(sys.stdout)))
    sys.stderr = cast(TextIO, CleanStream(raw(sys.stderr)))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved

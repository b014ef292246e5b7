"""The terminal's own escape sequences the console writes besides its frames: the bell, a desktop
notice (OSC 9 and OSC 777) and a copy to the clipboard (OSC 52), each wrapped for tmux's passthrough
(``\\ePtmux;...\\e\\\\``) when the console runs inside tmux. Pure functions over text: the app writes
what they return through its driver (``YanflowApp.write_sequence``)."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping

BEL = "\x07"
ESC = "\x1b"
ST = ESC + "\\"
MAX_NOTICE = 200  # characters of a desktop notice's text; terminals show one short line
MAX_COPY = 74_994  # bytes copied at most: xterm and tmux refuse longer OSC 52 payloads (100,000 base64 chars)


def in_tmux(env: Mapping[str, str] = os.environ) -> bool:
    return bool(env.get("TMUX"))


def tmux_wrap(sequence: str) -> str:
    """``sequence`` passed through tmux to the terminal outside it: every ESC doubled inside a DCS."""
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ST}"


def plain(text: str, limit: int = MAX_NOTICE) -> str:
    """``text`` safe inside an OSC string: no control characters (an ESC or BEL would end it early),
    one line, at most ``limit`` characters."""
    kept = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(kept.split())[:limit]


def desktop_notice(title: str, body: str, tmux: bool = False) -> str:
    """A desktop notice as OSC 9 (iTerm2, kitty, WezTerm, Windows Terminal) and OSC 777 (rxvt-unicode,
    foot, VTE terminals); a terminal that knows neither ignores both."""
    title, body = plain(title), plain(body)
    # OSC 9 has no title; a text starting "4;" is ConEmu's progress report, so it never starts with a digit
    osc9 = f"{ESC}]9;{title}: {body}{BEL}"
    osc777 = f"{ESC}]777;notify;{title.replace(';', ',')};{body.replace(';', ',')}{BEL}"
    if tmux:
        return tmux_wrap(osc9) + tmux_wrap(osc777)
    return osc9 + osc777


def copy_sequence(text: str, tmux: bool = False) -> str:
    """OSC 52: put ``text`` (UTF-8, cut at ``MAX_COPY`` bytes on a character boundary) on the
    terminal's clipboard. In tmux both forms go: the plain one for tmux itself (``set-clipboard on``
    keeps it as a paste buffer and tells the terminal outside), the wrapped one for
    ``allow-passthrough on``."""
    data = text.encode("utf-8")[:MAX_COPY].decode("utf-8", "ignore").encode("utf-8")
    sequence = f"{ESC}]52;c;{base64.b64encode(data).decode('ascii')}{BEL}"
    return sequence + tmux_wrap(sequence) if tmux else sequence

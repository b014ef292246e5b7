"""Names read from a cluster that were not UTF-8: Python carries their bad bytes as surrogates
(``surrogateescape``). ``unsurrogate`` writes each such byte as ``\\xNN``: how the name is shown
(``sanitize.clean``) and the local name a download of it gets (``backends/downloads.local_name``)."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def unsurrogate(text: str) -> str:
    """``text`` with each byte that was not UTF-8 as ``\\xNN`` (another lone surrogate as ``\\uNNNN``)."""
    return _SURROGATE.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"

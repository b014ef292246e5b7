"""Downloads in tests: what an interrupted try leaves (planted through the one writer,
``downloads.Landing``), and where it is."""

from __future__ import annotations

from pathlib import Path

from yanflow_tui.backends.downloads import Landing, partial_data, partials

__all__ = ["partial_data", "partials", "plant"]


def plant(target: Path, data: bytes, name: str = ".", folder: bool = False) -> Path:
    """An interrupted try of ``target`` that fetched ``data`` of member ``name``; its private file."""
    with Landing(target, folder) as landing:
        part = landing.open(name)
        part.write(data)
        part.close()
    return partial_data(target) if name == "." else partial_data(target) / name

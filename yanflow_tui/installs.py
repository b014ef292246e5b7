"""How this copy of yanflow-tui was installed, and so the command that adds one of its extras
(``[kubernetes]``, ``[determined]``, ``[tensorboard]``, ``[all]``) to it: ``pip install``, ``uv pip install``,
``pipx inject`` or ``uv tool install --with``. Read at run time from the interpreter's prefix (pipx leaves
``pipx_metadata.json`` in its venvs, uv ``uv-receipt.toml`` in its tools') and the distribution's
``INSTALLER`` and ``direct_url.json`` (an install from a folder names that folder, not a registry)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

DIST = "yanflow-tui"


@dataclass(frozen=True)
class Install:
    """``tool``: pip, uv (``uv pip``), pipx or uv-tool; ``source``: what to name the package by (its
    name, or the folder it was installed from); ``editable``: an ``-e`` install."""

    tool: str = "pip"
    source: str = DIST
    editable: bool = False


def version() -> str:
    """The installed distribution's version (its metadata), else the source's ``__version__``."""
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:  # a source checkout run without installing
        from yanflow_tui import __version__

        return __version__


def detect(prefix: str | None = None) -> Install:
    """How the running console was installed (``prefix``: the interpreter's, ``sys.prefix`` by default)."""
    root = Path(prefix or sys.prefix)
    # The installed one before the metadata a source checkout's build leaves in the current folder.
    found = list(metadata.distributions(name=DIST))
    dist = next((d for d in found if d.read_text("INSTALLER")), found[0] if found else None)
    source, editable = _source(dist)
    if (root / "pipx_metadata.json").exists():
        return Install("pipx", source, editable)
    if (root / "uv-receipt.toml").exists():
        return Install("uv-tool", source, editable)
    installer = ((dist.read_text("INSTALLER") if dist else None) or "pip").strip()
    return Install("uv" if installer == "uv" else "pip", source, editable)


def _source(dist: metadata.Distribution | None) -> tuple[str, bool]:
    """The folder a direct install came from (``direct_url.json``), else the distribution's name."""
    try:
        found = json.loads((dist.read_text("direct_url.json") if dist else None) or "{}")
    except ValueError:
        return DIST, False
    url = found.get("url", "")
    editable = bool(found.get("dir_info", {}).get("editable"))
    if url.startswith("file://"):
        return unquote(urlparse(url).path), editable
    return DIST, False


def extra_requirements(extra: str) -> list[str]:
    """The requirements an extra adds, from the installed metadata (an extra that names others, as
    ``[all]`` does, brings theirs); empty when the metadata cannot say."""
    try:
        requires = metadata.requires(DIST) or []
    except metadata.PackageNotFoundError:
        return []
    out: list[str] = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if not re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker):
            continue
        nested = re.fullmatch(rf"\s*{re.escape(DIST)}\s*\[([^\]]*)\]\s*", requirement)
        if nested:
            for name in nested.group(1).split(","):
                out += [r for r in extra_requirements(name.strip()) if r not in out]
        elif requirement.strip() not in out:
            out.append(requirement.strip())
    return out


def extra_command(extra: str, install: Install | None = None) -> str:
    """The shell command that adds ``extra`` to this install."""
    how = install or detect()
    with_extra = shlex.quote(f"{how.source}[{extra}]")
    if how.tool in ("pipx", "uv-tool"):
        requirements = extra_requirements(extra)
        if how.tool == "pipx":
            if not requirements:
                return f"pipx install --force {with_extra}"
            return "pipx inject " + " ".join(shlex.quote(r) for r in [DIST, *requirements])
        withs = " ".join(f"--with {shlex.quote(r)}" for r in requirements)
        return f"uv tool install {withs} {shlex.quote(how.source)}" if withs else f"uv tool install {with_extra}"
    editable = "-e " if how.editable else ""
    return f"{'uv pip' if how.tool == 'uv' else 'pip'} install {editable}{with_extra}"

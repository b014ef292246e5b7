"""Template projects: small runnable training projects (torchrun DDP, DeepSpeed, Accelerate, Horovod,
TensorFlow MultiWorkerMirroredStrategy, a Determined trial), each a folder of ``sample_jobs/projects/``
with its ``job.yaml`` spec. ``write_project`` copies one into a new (or empty) directory with the shared
``yanflow_events.py`` (TensorBoard event files without a framework) and points the spec's ``workdir``
there. The projects are data files: nothing here imports them. Plain file I/O: call from a thread.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from yanflow_tui.yamldoc import MODELINE, first_line

PACKAGE = Path(__file__).resolve().parent
PROJECT_DIRS = (PACKAGE.parent / "sample_jobs" / "projects", PACKAGE / "sample_jobs" / "projects")
COMMON = "_common"
SPEC = "job.yaml"
SKIP = ("__pycache__",)


@dataclass(frozen=True)
class Project:
    name: str  # the folder name: what ``yanflow-tui init`` takes
    folder: Path
    description: str = ""  # the spec's first comment line


class ProjectError(Exception):
    """A project that cannot be written: an unknown name, or a destination that is not empty."""


def is_project(path: Path) -> bool:
    """Whether ``path`` (a template picker's choice) names a shipped project folder. No I/O."""
    return path.parent in PROJECT_DIRS and path.name != COMMON


def projects_dir() -> Path | None:
    return next((d for d in PROJECT_DIRS if (d / COMMON).is_dir()), None)


def list_projects() -> list[Project]:
    root = projects_dir()
    if root is None:
        return []
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and (p / SPEC).is_file()):
        found.append(Project(folder.name, folder, _description(folder / SPEC)))
    return found


def project_names() -> list[str]:
    return [p.name for p in list_projects()]


def _description(path: Path) -> str:
    try:
        first = first_line(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""
    return first.lstrip("#").strip() if first.startswith("#") else ""


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not set(SKIP) & set(p.relative_to(folder).parts))


def write_project(name: str, dest: str | Path) -> Path:
    """Write project ``name`` into ``dest`` (created if missing) and return its spec's path.
    Raises ``ProjectError`` for an unknown name or a ``dest`` that exists and is not an empty folder."""
    found = {p.name: p for p in list_projects()}
    project = found.get(name)
    if project is None:
        known = ", ".join(found) or "none shipped"
        raise ProjectError(f"no template project {name!r}; the projects are: {known}")
    target = Path(dest).expanduser().resolve()
    if target.exists():
        if not target.is_dir():
            raise ProjectError(f"{dest}: exists and is not a folder")
        if any(target.iterdir()):
            raise ProjectError(f"{dest}: not empty; choose a new or empty folder (nothing was written)")
    target.mkdir(parents=True, exist_ok=True)
    common = project.folder.parent / COMMON
    for source in [*_files(common), *_files(project.folder)]:
        base = common if source.is_relative_to(common) else project.folder
        out = target / source.relative_to(base)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out)
    spec = target / SPEC
    text = _point_at_install(spec.read_text(encoding="utf-8"))
    if "\nkind: experiment" not in text:  # Determined sends the folder itself (determined.context)
        text += (
            "# Where `yanflow-tui init` wrote the project; in a container, the path the project is mounted at.\n"
            f"workdir: {json.dumps(str(target))}\n"
        )
    spec.write_text(text, encoding="utf-8")
    return spec


def _point_at_install(text: str) -> str:
    """The spec's text with its editor modeline naming this install's schema file (the shipped line is
    relative to the samples' folder, which the written project is not in)."""
    from yanflow_tui import fileschemas

    first, newline, rest = text.partition("\n")
    return fileschemas.install_modeline("spec") + newline + rest if first.startswith(MODELINE) else text

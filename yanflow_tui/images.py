"""The images catalogue: each cluster's ``images:`` in the config (a list of ``{name, description,
frameworks}``, or plain names), checked with ``file:line`` problems like the rest of the config, and
the Submit form's image field offering a cluster's catalogue as suggestions (free text still goes).
Pure functions, no I/O; a backend adds what it learns itself (``Backend.images``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from yanflow_tui.fieldtable import IMAGE_FIELDS, keys
from yanflow_tui.formfields import FormField
from yanflow_tui.model import Image
from yanflow_tui.yamldoc import Checker, join

KEYS = keys(IMAGE_FIELDS)  # the declarative table the config's JSON Schema is made from


def parse_images(check: Checker, path: str, value: Any) -> tuple[Image, ...]:
    """A cluster's ``images:``; every problem is reported at its line, and a bad entry is left out."""
    if value is None:
        return ()
    if not isinstance(value, list):
        check.error(path, "expected a list of images, e.g. [{name: pytorch/pytorch:2.4.0, frameworks: [pytorch]}]")
        return ()
    found: list[Image] = []
    for i, item in enumerate(value):
        where = join(path, i)
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            check.error(where, "expected an image name or a mapping with name, description and frameworks")
            continue
        entry = check.mapping(where, item, KEYS, required=("name",))
        name = check.string(join(where, "name"), entry.get("name"))
        if name is not None and (not name.strip() or any(c.isspace() for c in name.strip())):
            check.error(join(where, "name"), f"an image name has no spaces, got {name!r}")
            name = None
        description = check.string(join(where, "description"), entry.get("description"), nonempty=False) or ""
        frameworks = _frameworks(check, join(where, "frameworks"), entry.get("frameworks"))
        if name is None:
            continue
        if any(image.name == name for image in found):
            check.error(join(where, "name"), f"image {name!r} is listed twice")
            continue
        found.append(Image(name, description, frameworks))
    return tuple(found)


def _frameworks(check: Checker, path: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        check.error(path, "expected a list of frameworks, e.g. [pytorch, deepspeed]")
        return ()
    out = []
    for i, item in enumerate(value):
        text = check.string(join(path, i), item)
        if text:
            out.append(text)
    return tuple(out)


def merged(*groups: Iterable[Image]) -> tuple[Image, ...]:
    """The catalogues in order, each name once (the first one wins)."""
    seen: dict[str, Image] = {}
    for group in groups:
        for image in group:
            seen.setdefault(image.name, image)
    return tuple(seen.values())


def label(image: Image) -> str:
    """One line for a list of images: the name, its frameworks and description."""
    extra = ", ".join(image.frameworks)
    text = image.name + (f"  [{extra}]" if extra else "")
    return text + (f"  {image.description}" if image.description else "")


def with_images(fields: Iterable[FormField], images: Iterable[Image]) -> tuple[FormField, ...]:
    """The form's fields with the ``image`` field offering ``images`` (its choices: suggestions, not a
    closed list), and its help naming them."""
    catalogue = tuple(images)
    if not catalogue:
        return tuple(fields)
    names = tuple(image.name for image in catalogue)
    listed = "; ".join(label(image) for image in catalogue)
    return tuple(
        replace(f, choices=names, help=f"{f.help}; type any image, or one of the catalogue: {listed}")
        if f.key == "image"
        else f
        for f in fields
    )

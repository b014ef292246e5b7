"""Kubernetes job ids and the object names that reach request paths.

A job id is ``namespace/name`` (a Job) or ``namespace/name/pod`` (one pod of a multi-node Job), where
the namespace is a DNS-1123 label and the names are DNS-1123 subdomains. ``parse_id`` checks that
before any request: the client quotes each path parameter, but a name of ``.`` or ``..`` passes
quoting untouched and urllib3 then removes it as a dot segment, so ``ml/..`` would have become
``DELETE /api/v1/namespaces/ml/``. ``guard_paths`` is the second line: it wraps the API client's
REST layer and refuses any URL whose path holds an empty, dot or encoded-slash segment.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote, urlsplit

from yanflow_tui.errors import BackendError

_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
LABEL = re.compile(_LABEL)  # DNS-1123 label: namespaces
SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")  # DNS-1123 subdomain: Job and pod names
SUBDOMAIN_MAX = 253
_BAD_SEGMENTS = {"", ".", ".."}


def is_label(text: str) -> bool:
    return bool(LABEL.fullmatch(text))


def is_subdomain(text: str) -> bool:
    return len(text) <= SUBDOMAIN_MAX and bool(SUBDOMAIN.fullmatch(text))


def parse_id(job_id: str) -> tuple[str, str, str | None]:
    """``(namespace, name, pod or None)`` of a job id, or ``BackendError`` saying what is wrong."""
    parts = job_id.split("/") if isinstance(job_id, str) else []
    if len(parts) not in (2, 3):
        raise BackendError(f"not a Kubernetes job id: {job_id!r} (expected namespace/name or namespace/name/pod)")
    namespace, name, pod = parts[0], parts[1], parts[2] if len(parts) == 3 else None
    if not is_label(namespace):
        raise BackendError(
            f"not a Kubernetes job id: {job_id!r}: namespace {namespace!r} is not a DNS-1123 label "
            "(lowercase letters, digits and '-', at most 63)"
        )
    for what, value in (("name", name), ("pod", pod)):
        if value is not None and not is_subdomain(value):
            raise BackendError(
                f"not a Kubernetes job id: {job_id!r}: {what} {value!r} is not a DNS-1123 name "
                "(lowercase letters, digits, '-' and '.', at most 253)"
            )
    return namespace, name, pod


def check_path(url: str) -> None:
    """Refuse a request URL whose path has a segment that is empty, ``.``/``..`` (also
    percent-encoded) or an encoded ``/``: such a path names a collection or a parent, not the
    object it was built for."""
    for segment in urlsplit(url).path.split("/")[1:]:
        plain = unquote(segment)
        if plain in _BAD_SEGMENTS or "/" in plain or plain != plain.strip():
            raise BackendError(f"refused a request with a suspicious path segment {segment!r}")


def guard_paths(api_client) -> None:
    """Wrap ``api_client.rest_client.request`` so every request path passes ``check_path``."""
    rest = api_client.rest_client
    request = rest.request
    if getattr(request, "_path_guard", False):
        return

    @functools.wraps(request)
    def guarded(method, url, *args, **kwargs):
        check_path(url)
        return request(method, url, *args, **kwargs)

    guarded._path_guard = True  # type: ignore[attr-defined]
    rest.request = guarded

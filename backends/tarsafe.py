"""A tar archive from a cluster extracted into a ``Landing`` with our own member check, the same on every
Python (no ``tarfile`` ``filter=``, which Python 3.10.11- and 3.11.2 lack): a member with an absolute
name or a ``..`` is refused, as are device files, fifos and anything but files, folders and links; a
link (symbolic or hard) must stay inside the folder, and a member is never written through one. Files
land 0600 while partial; their final modes are ``Landing.finish``'s (the umask's, executable kept)."""

from __future__ import annotations

import posixpath
import tarfile
from collections.abc import Iterable

from yanflow_tui.backends.downloads import Landing, local_name, member_parts
from yanflow_tui.errors import BackendError

BLOCK = 64 * 1024  # bytes of a member read at a time (a stream cut part-way keeps what came before)


def check(member: tarfile.TarInfo) -> str:
    """The member's name, normalised (``./`` dropped; "" for the archive's top folder); a hostile one
    raises ``BackendError`` saying why."""
    name = member.name
    shown = local_name(name)
    if name.startswith("/") or posixpath.isabs(name):
        raise BackendError(f"the archive holds {shown!r}: an absolute name; refused")
    parts = member_parts(name)  # refuses ".."
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise BackendError(f"the archive holds {shown!r}: a device file or fifo; refused")
    if member.issym():
        link = member.linkname
        where = posixpath.normpath(posixpath.join(posixpath.dirname("/".join(parts)), link))
        if link.startswith("/") or where == ".." or where.startswith("../") or not parts:
            raise BackendError(f"the archive's link {shown!r} leads outside ({local_name(link)!r}); refused")
    if member.islnk():
        member_parts(member.linkname)
    return "/".join(parts)


def extract(tar: tarfile.TarFile, landing: Landing, members: Iterable[tarfile.TarInfo] | None = None) -> list[str]:
    """Every member of ``tar`` (stream mode works) checked and written into ``landing`` (a folder); the
    names of the files written."""
    files: list[str] = []
    for member in members if members is not None else tar:
        name = check(member)
        if member.isdir():
            if name:
                landing.mkdir(name)
        elif member.issym():
            landing.symlink(name, member.linkname)
        elif member.islnk():
            source = "/".join(member_parts(member.linkname))
            if source not in files:
                raise BackendError(f"the archive's hard link {local_name(member.name)!r} leads to no file of it")
            landing.copy(source, name)
            files.append(name)
        else:
            data = tar.extractfile(member)
            out = landing.open(name)
            try:
                while data is not None and (block := data.read(BLOCK)):
                    out.write(block)
            finally:
                out.close()
            files.append(name)
        if member.isfile() and member.mode & 0o111:
            landing.executable.add(("data", *member_parts(name)))
    return files

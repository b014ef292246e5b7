"""What every backend's download shares: the one writer (``Landing``: where a download collects until it
is complete and checked, then moved into place), the cluster-side scripts that list and hash what is to
be fetched (links followed, loops and links leading out of the folder skipped), and the sha256 check.

``Landing(target, folder)`` makes (or, for a resume, finds again) a private 0700 directory beside the
target, ``.NAME.yanflow-part-RANDOM``, and does all of its work through that directory's descriptor:
files are opened ``O_NOFOLLOW`` and checked with ``fstat`` (a regular file of ours), folders are made
0700 inside it, and nothing outside it is written or removed. A resume adopts such a directory only when
``lstat`` and ``fstat`` agree that it is a real directory of the current user with no access for others,
and it is locked (``flock``) while a download uses it. ``finish`` checks the sizes and sha256s, gives the
files the modes the user's umask allows, and renames the file or folder to the target without ever
replacing anything there (``renameat2(RENAME_NOREPLACE)``, else a hard link or a rename that cannot
replace a non-empty name). ``close`` keeps the private directory for a resume when bytes arrived, and
removes it when none did.

Remote names that are not UTF-8 are carried as surrogate-escaped text; they land under ``local_name``
(the bad bytes written ``\\xNN``), which is also how ``yanflow_tui.sanitize`` shows them (``yanflow_tui.bytenames``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import os
import posixpath
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from yanflow_tui.bytenames import unsurrogate
from yanflow_tui.errors import BackendError

CHUNK = 1 << 20  # bytes hashed at a time
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1
TOKEN = 8  # random bytes in a private folder's name


def _walk(on_file: str, on_skip: str) -> str:
    """``find -L`` over the folder ``$1`` (links followed; find itself reports and skips loops): a link
    whose target resolves outside the folder (``readlink -f`` against ``pwd -P``) is not entered,
    ``on_skip`` printed for it instead; ``on_file`` runs on every regular file."""
    inside = 'r=$(readlink -f -- "$1") && case $r in "$0"|"$0"/*) exit 1;; esac'
    return (
        'cd -- "$1" || exit 2; LC_ALL=C; export LC_ALL; top=$(pwd -P); '
        f"find -L . -mindepth 1 \\( -xtype l -exec sh -c '{inside}' \"$top\" {{}} \\; {on_skip} -prune \\) "
        f"-o -type f {on_file}"
    )


# What a download of ``$1`` fetches: "dir" then ``SIZE\tNAME\0`` per file and ``-\tNAME\0`` per link
# skipped, or "file" then ``SIZE\t.\0`` (through links alike). ``sh -c INFO sh PATH``.
INFO = (
    'if [ -d "$1" ]; then echo dir; ' + _walk('-printf "%s\\t%P\\0"', '-printf "-\\t%P\\0"') + "; "
    'elif [ -f "$1" ]; then echo file; printf "%s\\t.\\0" $(($(wc -c <"$1"))); '
    'else echo "no such file or folder: $1" >&2; exit 2; fi'
)
# The sha256 of a file, or of every file under a folder that INFO lists (``./name`` lines), as the
# cluster computes it: ``sh -c HASH sh PATH``.
HASH = 'if [ -d "$1" ]; then ' + _walk("-exec sha256sum -- {} +", "") + '; else sha256sum -- "$1"; fi'


@dataclass(frozen=True)
class Listing:
    """What INFO said: a file or a folder, each file's size (a single file's keyed "."), and what is
    left out (links leading out of the folder, loops), each with why."""

    folder: bool
    sizes: dict[str, int]
    skipped: tuple[str, ...]


def find_errors(code: int, err: str, what: str) -> list[str]:
    """The loops ``find -L`` reported (and skipped) when it exited non-zero; any other error raises."""
    if code == 0:
        return []
    lines = [line for line in err.splitlines() if line.strip()]
    loops = [line for line in lines if "loop" in line]
    if code != 1 or len(loops) != len(lines) or not loops:
        raise BackendError(f"{what}: {err.strip() or f'exit code {code}'}")
    return loops


def parse_info(data: bytes, loops: list[str] = ()) -> Listing:  # type: ignore[assignment]
    """INFO's output (bytes: a name that is not UTF-8 is kept, surrogate-escaped)."""
    text = data.decode("utf-8", "surrogateescape")
    head, _, rest = text.partition("\n")
    sizes, skipped = {}, []
    for entry in rest.split("\0"):
        size, _, name = entry.partition("\t")
        if size == "-" and name:
            skipped.append(f"{name} (a link leading outside the folder)")
        elif size.isdigit() and name:
            sizes[name] = int(size)
    skipped += [f"{line.partition(': ')[2] or line} (skipped)" for line in loops]
    return Listing(head.strip() == "dir", sizes, tuple(skipped))


def output_folder(outputs: str | None, workdir: str) -> str:
    """A job's output folder, where its Files view opens and a relative download path starts: the spec's
    ``outputs:`` (absolute, or relative to the workdir), else the workdir itself."""
    if not outputs:
        return workdir
    if outputs.startswith(("/", "~")):
        return outputs
    return posixpath.join(workdir or ".", outputs)


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at ``path``, read a block at a time."""
    with path.open("rb") as handle:
        return _sha256(handle.fileno())


def _sha256(fd: int) -> str:
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while block := os.read(fd, CHUNK):
        digest.update(block)
    return digest.hexdigest()


def parse_hashes(text: str, single: str | None = None) -> dict[str, str]:
    """name -> sha256 from HASH's output (``./`` dropped); the line of ``single`` (the path of a single
    file hashed, where the caller names it) is keyed ".", as its size is."""
    found = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64:
            found["." if single is not None and name == single else name.removeprefix("./")] = digest
    return found


def local_name(name: str) -> str:
    """A remote name as it is written here: bytes that were not UTF-8 (surrogate-escaped) as ``\\xNN``."""
    return unsurrogate(name)


def member_parts(name: str) -> tuple[str, ...]:
    """The local path parts of a member ``name`` of a folder ("." is the folder itself: no parts); a
    name that is absolute or climbs with ``..`` is refused."""
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if name.startswith("/") or ".." in parts:
        raise BackendError(f"a file name leads outside the folder: {local_name(name)!r}; refused")
    return tuple(local_name(p) for p in parts)


class Part:
    """A file of a ``Landing`` open for writing at its end; ``close`` flushes it to disk."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


class Landing:
    """The one download writer (see the module's docstring). Blocking: async callers run its methods in
    a thread. ``folder``: a folder is built (members named by relative path), else a single file ("."
    its only member). ``resumed``: a private directory an earlier try left was adopted."""

    def __init__(self, target: Path, folder: bool) -> None:
        self.target, self.folder = target, folder
        self.executable: set[tuple[str, ...]] = set()  # members made executable at the end (from a tar)
        self.finished = False
        self.discard_on_close = False  # True: an unfinished try leaves nothing (no resume from it)
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(target):
            raise BackendError(f"{target} exists; not replaced")
        self.prefix = f".{target.name}.yanflow-part-"
        self.parent = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            adopted = self._adopt()
            self.resumed = adopted is not None
            self.name, self.fd = adopted or self._make()
            if self.resumed and self._kind() not in (None, stat.S_IFDIR if folder else stat.S_IFREG):
                self._empty(self.fd)  # an earlier try of the other kind (file / folder): start again
        except BaseException:
            os.close(self.parent)
            raise

    # -- the private directory -------------------------------------------------------------------
    def _ours(self, fd: int) -> bool:
        """``fd`` is a directory of the current user that no one else may enter; locked for us."""
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another download of it running: not ours
        except OSError:
            return False
        return True

    def _adopt(self) -> tuple[str, int] | None:
        """A private directory an interrupted try of this target left (lstat and fstat agreeing)."""
        for entry in sorted(os.listdir(self.parent)):
            token = entry[len(self.prefix) :] if entry.startswith(self.prefix) else ""
            if len(token) != 2 * TOKEN or token.strip("0123456789abcdef"):
                continue  # not ours (another target's, say ".a.yanflow-part-x" beside "a")
            try:
                seen = os.stat(entry, dir_fd=self.parent, follow_symlinks=False)
                fd = os.open(entry, _DIR, dir_fd=self.parent)
            except OSError:
                continue  # a link, not a folder, gone: not ours
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) == (seen.st_dev, seen.st_ino) and self._ours(fd):
                return entry, fd
            os.close(fd)
        return None

    def _make(self) -> tuple[str, int]:
        for _ in range(100):
            name = self.prefix + secrets.token_hex(TOKEN)
            try:
                os.mkdir(name, 0o700, dir_fd=self.parent)
            except FileExistsError:
                continue
            fd = os.open(name, _DIR, dir_fd=self.parent)
            if self._ours(fd):
                return name, fd
            os.close(fd)
            raise BackendError(f"{self.target.parent}: cannot make a private folder for the download")
        raise BackendError(f"{self.target.parent}: no free name for a private folder")

    def _kind(self) -> int | None:
        try:
            return stat.S_IFMT(os.stat("data", dir_fd=self.fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return None

    # -- members -----------------------------------------------------------------------------------
    def _parts(self, name: str) -> tuple[str, ...]:
        if not self.folder:
            if name != ".":
                raise BackendError(f"a file download has one member, not {local_name(name)!r}")
            return ("data",)
        return ("data", *member_parts(name))

    def _folder_of(self, parts: tuple[str, ...], create: bool) -> int:
        """A descriptor of the folder holding ``parts[-1]``: each step opened ``O_NOFOLLOW`` (made 0700
        when ``create``), so nothing is reached through a link."""
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                try:
                    step = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o700, dir_fd=fd)
                    step = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise BackendError(f"{'/'.join(parts[1:])}: its folder is a link or a file") from None
                    raise
                os.close(fd)
                fd = step
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open(self, parts: tuple[str, ...], flags: int, create: bool = False) -> int:
        """``parts`` opened with ``flags`` (never through a link); it must be a regular file of ours."""
        folder = self._folder_of(parts, create)
        try:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        finally:
            os.close(folder)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            os.close(fd)
            raise BackendError(f"{'/'.join(parts[1:]) or self.target.name}: not a file of ours; refused")
        return fd

    def have(self, name: str, size: int, digest: str | None) -> int:
        """The bytes of ``name`` an earlier try left: ``size`` when it is complete (its sha256 matching
        ``digest``, where one is given), else what a resume starts from (0: fetch it whole)."""
        parts = self._parts(name)
        try:
            fd = self._open(parts, os.O_RDWR)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        except (OSError, BackendError):
            self._remove(parts)
            return 0
        try:
            got = os.fstat(fd).st_size
            if got > size or (got == size and digest is not None and _sha256(fd) != digest):
                os.ftruncate(fd, 0)  # the source changed since: start again
                return 0
            return got
        finally:
            os.close(fd)

    def open(self, name: str, offset: int = 0) -> Part:
        """``name`` open for writing from ``offset`` (what is past it cut off); made 0600 when new."""
        fd = self._open(self._parts(name), os.O_WRONLY | os.O_CREAT, create=True)
        os.ftruncate(fd, offset)
        os.lseek(fd, offset, os.SEEK_SET)
        return Part(fd)

    def mkdir(self, name: str) -> None:
        parts = self._parts(name)
        os.close(self._folder_of((*parts, "."), create=True))

    def symlink(self, name: str, link: str) -> None:
        """A link ``name`` -> ``link`` (the caller checked that it stays inside)."""
        parts = self._parts(name)
        folder = self._folder_of(parts, create=True)
        try:
            os.symlink(link, parts[-1], dir_fd=folder)
        finally:
            os.close(folder)

    def copy(self, source: str, name: str) -> None:
        """``name`` as a copy of the member ``source`` (a hard link of an archive)."""
        src = self._open(self._parts(source), os.O_RDONLY)
        out = self.open(name)
        try:
            os.lseek(src, 0, os.SEEK_SET)
            while block := os.read(src, CHUNK):
                out.write(block)
        finally:
            os.close(src)
            out.close()

    def _remove(self, parts: tuple[str, ...]) -> None:
        with contextlib.suppress(OSError):
            folder = self._folder_of(parts, create=False)
            try:
                if stat.S_ISDIR(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode):
                    inner = os.open(parts[-1], _DIR, dir_fd=folder)
                    self._empty(inner)
                    os.close(inner)
                    os.rmdir(parts[-1], dir_fd=folder)
                else:
                    os.unlink(parts[-1], dir_fd=folder)
            finally:
                os.close(folder)

    # -- the whole -----------------------------------------------------------------------------------
    def _tree(self) -> tuple[dict[tuple[str, ...], os.stat_result], list[tuple[str, ...]]]:
        """Every regular file under ``data`` (parts -> lstat) and every folder (deepest first)."""
        files: dict[tuple[str, ...], os.stat_result] = {}
        folders: list[tuple[str, ...]] = []
        kind = self._kind()
        if kind == stat.S_IFREG:
            files[("data",)] = os.stat("data", dir_fd=self.fd, follow_symlinks=False)
        if kind != stat.S_IFDIR:
            return files, folders

        def walk(fd: int, parts: tuple[str, ...]) -> None:
            for entry in os.scandir(fd):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    files[parts + (entry.name,)] = info
                elif stat.S_ISDIR(info.st_mode):
                    inner = os.open(entry.name, _DIR, dir_fd=fd)
                    try:
                        walk(inner, parts + (entry.name,))
                    finally:
                        os.close(inner)
            folders.append(parts)

        data = os.open("data", _DIR, dir_fd=self.fd)
        try:
            walk(data, ("data",))
        finally:
            os.close(data)
        return files, folders

    def kept(self) -> int:
        """The bytes earlier tries left here."""
        return sum(info.st_size for info in self._tree()[0].values())

    def finish(self, sizes: dict[str, int] | None, hashes: dict[str, str] | None, what: str, source: str) -> None:
        """Check what arrived against the ``source``'s sizes (every file, none more; None: not checked)
        and sha256s (where given), give it its final modes and move it to the target; on a mismatch
        all of it is removed."""
        if self.folder:
            self.mkdir(".")  # a folder with no files is a folder still
        files, folders = self._tree()
        if sizes is not None:
            want = {self._parts(name): size for name, size in sizes.items()}
            wrong = sorted("/".join(p[1:]) or "." for p in set(want) ^ set(files))
            wrong += sorted("/".join(p[1:]) or "." for p, n in want.items() if p in files and files[p].st_size != n)
            if wrong:
                got = files.get(("data",))
                self.discard()
                if not self.folder:
                    n = got.st_size if got else 0
                    raise BackendError(f"{what}: {n} bytes arrived, {source} has {sizes.get('.', 0)}; removed")
                raise BackendError(
                    f"{what}: the files arrived do not match {source}'s ({', '.join(wrong[:3])}); removed"
                )
        bad = []
        for name, digest in (hashes or {}).items():
            fd = self._open(self._parts(name), os.O_RDONLY)
            try:
                if _sha256(fd) != digest:
                    bad.append(name)
            finally:
                os.close(fd)
        if bad:
            self.discard()
            which = "" if not self.folder else f" for {', '.join(local_name(b) for b in sorted(bad)[:3])}"
            raise BackendError(f"{what}: the sha256 does not match {source}'s{which}; removed")
        self._modes(files, folders)
        try:
            _rename_noreplace(self.fd, "data", self.parent, self.target.name)
        except FileExistsError:
            raise BackendError(f"{self.target} exists; not replaced") from None
        self.discard()
        self.finished = True

    def _modes(self, files: dict[tuple[str, ...], os.stat_result], folders: list[tuple[str, ...]]) -> None:
        """Files 0666 (0777 when executable in an archive) and folders 0777, less the user's umask."""
        os.mkdir("umask", 0o777, dir_fd=self.fd)  # what the umask leaves of 0777, read without os.umask
        allowed = os.stat("umask", dir_fd=self.fd, follow_symlinks=False).st_mode & 0o777
        os.rmdir("umask", dir_fd=self.fd)
        for parts in files:
            fd = self._open(parts, os.O_RDONLY)
            try:
                os.fchmod(fd, allowed & (0o777 if parts in self.executable else 0o666))
            finally:
                os.close(fd)
        for parts in folders:
            fd = self._folder_of((*parts, "."), create=False)
            try:
                os.fchmod(fd, allowed)
            finally:
                os.close(fd)

    def discard(self) -> None:
        """The private directory removed, with all it holds (through its descriptor only)."""
        self._empty(self.fd)
        with contextlib.suppress(OSError):
            seen = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
            info = os.fstat(self.fd)
            if (seen.st_dev, seen.st_ino) == (info.st_dev, info.st_ino):
                os.rmdir(self.name, dir_fd=self.parent)

    def _empty(self, fd: int) -> None:
        for entry in os.scandir(fd):
            if entry.is_dir(follow_symlinks=False):
                inner = os.open(entry.name, _DIR, dir_fd=fd)
                try:
                    self._empty(inner)
                finally:
                    os.close(inner)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)

    def close(self) -> None:
        """Done with it: an unfinished try's private directory is kept for a resume when it holds a byte
        of what arrived, else removed (a download cut before its first byte leaves nothing)."""
        if self.fd < 0:
            return
        try:
            if not self.finished and (self.discard_on_close or not self.kept()):
                self.discard()
        finally:
            os.close(self.fd)
            os.close(self.parent)
            self.fd = -1

    def __enter__(self) -> Landing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Rename, failing with FileExistsError where ``dst`` exists (``renameat2``; where the system or
    file system lacks it, a file is hard-linked then unlinked, a folder renamed after a check: rename
    never replaces anything but an empty folder)."""
    call = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if call is not None:
        if call(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), dst)
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), dst)
    with contextlib.suppress(FileNotFoundError):
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    if stat.S_ISREG(os.stat(src, dir_fd=src_dir, follow_symlinks=False).st_mode):
        os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
        os.unlink(src, dir_fd=src_dir)
    else:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)

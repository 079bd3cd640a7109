"""Writing the files a user asked for: atomically where that is safe, in place where it is not.

A regular file (or an absent path) is written to a temporary file beside it and renamed over it,
so a reader never sees half a file and a failed run leaves the old file as it was. Anything
else -- a character or block device (``/dev/null``), a FIFO, a socket, ``/dev/stdout`` -- is
opened and written in place: renaming over it would replace the device node with a regular file.
A symlink is followed: the file it points to is replaced and the link stays a link.

New files get ``0666 & ~umask`` and new directories ``0777 & ~umask``, as ``open()`` and
``mkdir()`` give; a replaced file or directory keeps its mode (``tempfile`` alone gives 0600/0700).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from selp.errors import SelpError


def current_umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # no race-free way elsewhere: set and restore at once
    os.umask(old)
    return old


def new_file_mode() -> int:
    """The mode ``open()`` gives a new file."""
    return 0o666 & ~current_umask()


def new_dir_mode() -> int:
    """The mode ``mkdir()`` gives a new directory."""
    return 0o777 & ~current_umask()


def writes_in_place(path: str | Path) -> bool:
    """Whether ``path`` exists and is not a regular file (a device, FIFO, socket): written in place."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise SelpError(f"{path}: cannot write ({err.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SelpError(f"{path}: is a directory, not a file")
    return not stat.S_ISREG(st.st_mode)


def _target(path: Path) -> Path:
    """The file a write to ``path`` replaces: a symlink's final target (created if dangling)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def open_output(path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """A file object for writing the output ``path`` (``mode`` "w" or "wb"); see the module
    docstring for how each kind of target is written. On an error inside the block nothing is
    left at a regular target and the temporary file is removed."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_output: mode must be 'w' or 'wb', not {mode!r}")
    enc = None if "b" in mode else encoding
    path = Path(path)
    try:
        if writes_in_place(path):
            with open(path, mode, encoding=enc, newline=newline) as fh:
                yield fh
            return
        target = _target(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            keep = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            keep = new_file_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise SelpError(f"{path}: cannot write ({err.strerror})") from None
    try:
        os.fchmod(fd, keep)
        with os.fdopen(fd, mode, encoding=enc, newline=newline) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and not isinstance(err, SelpError):
            raise SelpError(f"{path}: cannot write ({err.strerror or err})") from None
        raise


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` (:func:`open_output`)."""
    with open_output(path, "w") as fh:
        fh.write(text)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (:func:`open_output`), synced to disk before it replaces the old file."""
    with open_output(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        with contextlib.suppress(OSError):  # a FIFO or device cannot be synced
            os.fsync(fh.fileno())


def check_dir_target(path: str | Path) -> Path:
    """``path`` as an output directory: absent or a directory; anything else is refused in one
    line (a directory is never put in place of a file or a device)."""
    p = Path(path)
    if os.path.lexists(p) and not p.is_dir():
        raise SelpError(f"{p}: exists and is not a directory")
    return p


@contextlib.contextmanager
def output_dir(path: str | Path) -> Iterator[Path]:
    """A fresh directory beside ``path`` to fill; on success it replaces ``path`` (whose mode it
    keeps, else ``0777 & ~umask``), on an error it is removed and ``path`` is untouched."""
    out = check_dir_target(path)
    if out.is_symlink():
        out = Path(os.path.realpath(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(os.stat(out).st_mode) if out.exists() else new_dir_mode()
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        os.chmod(tmp, mode)
    except OSError as err:
        raise SelpError(f"{path}: cannot write ({err.strerror})") from None
    try:
        yield tmp
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def temp_dir(prefix: str, parent: str | Path) -> Path:
    """A new empty directory in ``parent`` with the mode ``mkdir()`` would give (``mkdtemp``
    makes 0700): for directories that are renamed into place and read by others afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(tmp, new_dir_mode())
    return tmp


def replace_dir(ready: Path, out: Path) -> None:
    """Put the finished directory ``ready`` at ``out`` (same file system), replacing what is
    there: readers see the old directory or the new one, never a half-written one."""
    check_dir_target(out)
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(ready, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(ready, out)


@contextlib.contextmanager
def staged_path(path: str | Path) -> Iterator[Path]:
    """A path for a writer that opens files by name (DuckDB's ``COPY``, Spark): a temporary file
    beside ``path`` that replaces it on success (with :func:`open_output`'s modes), or ``path``
    itself when it is a device or FIFO."""
    path = Path(path)
    if writes_in_place(path):
        yield path
        return
    target = _target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        keep = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else new_file_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as err:
        raise SelpError(f"{path}: cannot write ({err.strerror})") from None
    try:
        yield Path(tmp)
        os.chmod(tmp, keep)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

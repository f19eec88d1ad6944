"""Reading a file a user or an operator named, without trusting what it is.

A FIFO or a device named ``*.py`` or ``*.json`` (in a plugin folder, on a command line) would
block ``open().read()`` for ever or never end; a name longer than the file system allows raises
an ``OSError`` that no caller expects.  ``read_regular`` opens without blocking, reads only a
regular file, and at most ``limit`` bytes, and says what is wrong in one line.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFile(OSError):
    """The path names something that is not a regular file, or that cannot be read; the
    message is one line meant for the user."""


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``, else refused)."""
    shown = str(path)[:200]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise NotARegularFile(f"{shown!r} does not exist") from None
        why = "its name is too long" if e.errno == errno.ENAMETOOLONG else (e.strerror or e)
        raise NotARegularFile(f"cannot read {shown!r}: {why}") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                    or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise NotARegularFile(f"{shown!r} is {kind}, not a file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(f"{shown!r} is larger than {limit:,} bytes")
    return data


def is_regular(path: Path) -> bool:
    """``path`` is a regular file (symlinks followed), without raising on odd names."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False

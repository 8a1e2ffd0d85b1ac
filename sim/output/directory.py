"""Output directories, checked before any work starts: a run is not lost at its end because
``--out`` named a place nobody can write.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["OutputDirError", "prepare_output_dir"]


_WRITABLE = "an output directory must be one this user can create and write in"


class OutputDirError(ValueError):
    """An output directory cannot be created or written, or holds what a command would mix
    its own output with.

    ``str(error)`` is one line, ``output error: <path>: <what failed> (<what is needed>)``.
    """

    def __init__(self, path: Path, problem: str, needed: str = _WRITABLE) -> None:
        self.path = path
        super().__init__(f"output error: {path}: {problem} ({needed})")


def prepare_output_dir(path: Path) -> Path:
    """Create directory ``path`` and its parents if needed, and check that a file can be
    created in it (a temporary file, removed at once); return ``path``.

    Raises OutputDirError if ``path`` is not a directory or cannot be created or written
    (a parent that is a file, no permission, a read-only file system).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputDirError(
            path, "cannot create the directory: a file of that name exists"
        ) from None
    except OSError as error:
        raise OutputDirError(path, f"cannot create the directory: {error.strerror}") from None
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as error:
        raise OutputDirError(path, f"cannot write in the directory: {error.strerror}") from None
    return path

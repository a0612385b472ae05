"""Writing exported files atomically: a temporary file in the target directory, flushed
to disk, then `os.replace`d, so a reader sees the old file or the complete new one, never a
partial one. Standard library only."""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Serialise `obj` compactly (strict JSON, no NaN) to `path` atomically; return the path."""
    return write_text(path, json.dumps(obj, separators=(",", ":"), allow_nan=False))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` to `path` atomically (creating the directory); return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target

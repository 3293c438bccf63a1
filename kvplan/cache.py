"""A small on-disk cache of derived JSON (validated presets, weight estimates).

Where: ``$KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan``, else ``~/.cache/kvplan``; ``KVPLAN_NO_CACHE=1``
turns it off.  Entries are named by their caller's key (which must change whenever the inputs do) and carry an
``ident`` that is checked on read, so a name collision reads as a miss.  A cache that cannot be read or written
is ignored: it only ever saves time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kvplan import __version__


def cache_dir(kind: str) -> Path | None:
    if os.environ.get("KVPLAN_NO_CACHE") == "1":
        return None
    base = os.environ.get("KVPLAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kvplan")
    return Path(base) / kind


def load(kind: str, key: str, ident: str) -> Any | None:
    """The cached value for ``key`` (None on a miss, a mismatched ident, or any read problem)."""
    d = cache_dir(kind)
    if d is None:
        return None
    try:
        blob = json.loads((d / f"{key}-{__version__}.json").read_text())
        if blob.get("ident") == ident:
            return blob["data"]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    return None


def store(kind: str, key: str, ident: str, data: Any) -> None:
    d = cache_dir(kind)
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f"{key}-{__version__}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"ident": ident, "data": data}))
        tmp.replace(d / f"{key}-{__version__}.json")
    except (OSError, TypeError, ValueError):
        pass

"""Where presets live: the shipped folder (:func:`configs_dir`), the user folders (:func:`user_dirs`, where
``kvplan models add`` writes: :func:`user_models_dir`) and the size and depth bounds of a preset file.

Example: ``KVPLAN_PRESETS=/team/kvplan`` -> ``user_dirs() == (Path('/team/kvplan'),)``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

from kvplan.errors import InputError

# ------------------------------------------------------------------------------------------ where they live

Origin = Literal["shipped", "user"]

#: a preset file (shipped or user) larger than this is refused unread (the largest shipped preset is 12 kB)
MAX_PRESET_BYTES = 2**20
MAX_USER_PRESET_BYTES = MAX_PRESET_BYTES  # the name of earlier releases
#: tables / arrays nest at most this deep in a preset file (the deepest shipped one: 9 levels)
MAX_PRESET_DEPTH = 32
#: values (keys, table headers, array items, inline tables) one preset file may hold, counted from the text before
#: it is parsed (``loading.count_toml_elements``): the largest shipped preset has 373; tomllib takes ~22 us a value,
#: so a 1 MiB file of 500,000 array items took 11 s and now stops after one regex pass
MAX_PRESET_ELEMENTS = 20_000


@functools.cache
def _packaged_configs() -> Path | None:
    pkg = Path(__file__).resolve().parent.parent.parent  # kvplan/
    for cand in (pkg / "configs", pkg.parent / "configs"):
        if (cand / "models").is_dir():
            return cand
    return None


def configs_dir() -> Path:
    """The shipped preset folder: ``$KVPLAN_CONFIGS``, the wheel's ``kvplan/configs``, or the checkout's ``configs``."""
    env = os.environ.get("KVPLAN_CONFIGS")
    if env:
        return Path(env)
    found = _packaged_configs()
    if found is None:
        raise InputError("preset folder not found", field="configs", hint="reinstall kvplan or set KVPLAN_CONFIGS")
    return found


def user_dirs() -> tuple[Path, ...]:
    """The user preset folders, in the order they win (each may hold ``models/`` and ``hardware/``).

    ``$KVPLAN_PRESETS`` when it is set: its folders separated by ``os.pathsep`` (``:`` on Linux and macOS, ``;`` on
    Windows), empty entries skipped, so a set but empty ``KVPLAN_PRESETS`` turns user presets off.  Else
    ``$XDG_CONFIG_HOME/kvplan`` (a relative XDG_CONFIG_HOME is ignored, as the XDG base-directory spec says), else
    ``~/.config/kvplan``.

    Example: ``KVPLAN_PRESETS=/team/kvplan:~/kvplan`` -> ``(Path('/team/kvplan'), Path('/home/me/kvplan'))``.
    """
    env = os.environ.get("KVPLAN_PRESETS")
    if env is not None:
        return tuple(Path(p).expanduser() for p in env.split(os.pathsep) if p.strip())
    xdg = os.environ.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".config"
    return (base / "kvplan",)


def user_models_dir() -> Path:
    """Where ``kvplan models add`` writes: ``models/`` of the first user folder (:func:`user_dirs`)."""
    dirs = user_dirs()
    if not dirs:
        raise InputError(
            "user presets are turned off (KVPLAN_PRESETS is set but empty)",
            field="KVPLAN_PRESETS",
            hint="set it to a folder, or unset it to use ~/.config/kvplan",
        )
    return dirs[0] / "models"


def _is_shipped(path: Path) -> bool:
    try:
        return path.parent.parent == configs_dir()
    except InputError:  # no shipped folder at all: nothing is shipped
        return False

"""Looking presets up: every shipped and user preset with where it came from (:func:`model_entries`,
:func:`gpu_entries`), the file of an id, a preset's family, and the filters of ``kvplan models`` / ``kvplan gpus``.

Example: ``filter_models(search="llama")`` -> the model presets whose id or an alias contains "llama".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from kvplan.errors import InputError, echo

if TYPE_CHECKING:
    from kvplan.family import Family

from kvplan.inputs.presets.files import Origin, configs_dir, user_dirs
from kvplan.inputs.presets.loading import _cached
from kvplan.inputs.presets.schema import HardwarePreset, ModelPreset, _Preset

# ------------------------------------------------------------------------------------------- listings


class PresetEntry(Generic[_Preset]):
    """A loaded preset and where it came from: what ``kvplan models`` / ``kvplan gpus`` show (a plain class: nothing
    copies or compares it, and a dataclass would cost every start its generated code)."""

    __slots__ = ("origin", "path", "preset", "shadows")

    def __init__(self, preset: _Preset, origin: Origin, path: Path, shadows: Path | None = None) -> None:
        self.preset: _Preset = preset
        self.origin: Origin = origin
        self.path = path
        self.shadows = shadows  # the shipped file with the same id, which this user preset replaces

    @property
    def id(self) -> str:
        return self.preset.id


def _toml_files(folder: Path) -> list[Path]:
    """The ``*.toml`` files of a preset folder (none when it does not exist); a folder the system cannot list (a
    name longer than NAME_MAX in ``KVPLAN_PRESETS``, no permission) is an InputError naming it, not a crash."""
    try:
        return sorted(folder.glob("*.toml"))
    except OSError as exc:
        raise InputError(
            f"cannot list the preset folder {echo(str(folder))}: {exc.strerror or type(exc).__name__}",
            field="KVPLAN_PRESETS",
            hint="set KVPLAN_PRESETS (or XDG_CONFIG_HOME) to folders that exist and can be read",
        ) from None


def _user_entries(
    cls: type[_Preset], kind: str, users: tuple[Path, ...], shipped: dict[str, Path]
) -> list[PresetEntry[_Preset]]:
    """The user presets of ``kind`` (models / hardware): folder order, then file name; an earlier folder wins an id,
    and one id in two files of the same folder is an error (naming both files)."""
    out: list[PresetEntry[_Preset]] = []
    taken: set[str] = set()
    for folder in users:
        here: dict[str, Path] = {}
        for path in _toml_files(folder / kind):
            obj = _cached(cls, path)
            if obj.id in here:
                raise InputError(
                    f"{path}: id '{obj.id}' is also the id of {here[obj.id]}",
                    field="preset",
                    hint="keep one file per id",
                )
            here[obj.id] = path
            if obj.id not in taken:
                out.append(PresetEntry(obj, "user", path, shipped.get(obj.id)))
        taken.update(here)
    return out


def _entries(
    cls: type[_Preset], kind: str, shipped_dir: Path, users: tuple[Path, ...]
) -> tuple[PresetEntry[_Preset], ...]:
    shipped: list[PresetEntry[_Preset]] = [
        PresetEntry(_cached(cls, p), "shipped", p) for p in _toml_files(shipped_dir / kind)
    ]
    user: list[PresetEntry[_Preset]] = _user_entries(cls, kind, users, {e.preset.id: e.path for e in shipped})
    replaced: set[str] = {e.preset.id for e in user}
    return tuple(user + [e for e in shipped if e.preset.id not in replaced])


@functools.cache
def _model_entries(shipped_dir: Path, users: tuple[Path, ...]) -> tuple[PresetEntry[ModelPreset], ...]:
    return _entries(ModelPreset, "models", shipped_dir, users)


@functools.cache
def _gpu_entries(shipped_dir: Path, users: tuple[Path, ...]) -> tuple[PresetEntry[HardwarePreset], ...]:
    return _entries(HardwarePreset, "hardware", shipped_dir, users)


def model_entries() -> tuple[PresetEntry[ModelPreset], ...]:
    """Every model preset with its origin: the user's first (folder order, then file name), then the shipped ones
    (file name order) whose id no user preset takes.  Loaded once per process and preset folders."""
    return _model_entries(configs_dir(), user_dirs())


def gpu_entries() -> tuple[PresetEntry[HardwarePreset], ...]:
    """Every hardware preset with its origin, in the order of :func:`model_entries`."""
    return _gpu_entries(configs_dir(), user_dirs())


def all_models() -> tuple[ModelPreset, ...]:
    """The model presets kvplan resolves names against (user presets first, so their ids and aliases win)."""
    return tuple(e.preset for e in model_entries())


def all_gpus() -> tuple[HardwarePreset, ...]:
    """The hardware presets kvplan resolves ``--gpu`` against (user presets first)."""
    return tuple(e.preset for e in gpu_entries())


def clear_caches() -> None:
    """Forget the presets loaded in this process (the on-disk validated cache stays): after writing a file."""
    _model_entries.cache_clear()
    _gpu_entries.cache_clear()


def preset_origin(preset: ModelPreset | HardwarePreset) -> Origin:
    """``"user"`` or ``"shipped"`` for a preset of :func:`all_models` / :func:`all_gpus` (by identity, else by id:
    the preset that id resolves to)."""
    entries: tuple[PresetEntry[Any], ...] = model_entries() if isinstance(preset, ModelPreset) else gpu_entries()
    for e in entries:
        if e.preset is preset:
            return e.origin
    return next((e.origin for e in entries if e.id == preset.id), "shipped")


def model_file_for(model_id: str) -> Path:
    """The preset file that holds ``model_id``: a user file if one does (``<org>--<name>.toml`` in a user folder's
    ``models/``, else any user model file with that id: a user file wins, as in :func:`model_entries`), else the
    shipped ``configs/models/<org>--<name>.toml`` (which need not exist).  Only user files are read here."""
    name = model_id.replace("/", "--") + ".toml"
    users = user_dirs()
    for folder in users:
        cand = folder / "models" / name
        if os.path.isfile(cand):  # False (never an error) for a name too long for the file system or holding NUL
            return cand
    for folder in users:
        for path in _toml_files(folder / "models"):
            if _cached(ModelPreset, path).id == model_id:
                return path
    return configs_dir() / "models" / name


def gpu_file_for(gpu_id: str) -> Path:
    """The preset file named for hardware id ``gpu_id`` (``<id>.toml``): a user folder's first, else the shipped one
    (which need not exist).  A fast path for ``--gpu ID``: resolving a name or alias reads every GPU preset."""
    name = gpu_id + ".toml"
    for folder in user_dirs():
        cand = folder / "hardware" / name
        if os.path.isfile(cand):
            return cand
    return configs_dir() / "hardware" / name


# -------------------------------------------------------------------------------------------- filters


def model_family(preset: ModelPreset) -> Family:
    """The KV family of a model preset, as planning detects it (:func:`kvplan.hfconfig.detect.detect_family`), after
    the checks planning runs first (:func:`kvplan.hfconfig.checks.check_geometry`: a user preset's
    ``architectures = 5`` is an InputError, as in a config.json, not a crash of ``kvplan models``)."""
    from kvplan.hfconfig.checks import check_geometry
    from kvplan.hfconfig.detect import detect_family
    from kvplan.hfconfig.normalize import flatten_config

    flat = flatten_config(preset.config)
    check_geometry(flat)
    return detect_family(flat)


def parse_family(text: str) -> Family:
    """``--family`` text -> Family (``"MLA"``, ``"hybrid-swa"`` and ``"hybrid_swa"`` all read); InputError else."""
    from kvplan.family import Family, family_or_none

    fam = family_or_none(text.strip().lower().replace("-", "_"))
    if fam is None:
        raise InputError(f"unknown family '{echo(text)}'", field="--family", hint="use one of " + ", ".join(Family))
    return fam


def _matches(needle: str, names: Iterable[str]) -> bool:
    return any(needle in n.lower() for n in names)


def model_matches(preset: ModelPreset, *, family: Family | None = None, search: str | None = None) -> bool:
    """True when the preset is of ``family`` (if given) and ``search`` (if given) is a case-insensitive substring of
    its id, an alias or a published variant's id.

    Example: ``search="fp8"`` keeps ``Qwen/Qwen3-32B`` (variant ``Qwen/Qwen3-32B-FP8``); ``family=Family.MLA`` keeps
    DeepSeek-V3 and drops Llama.
    """
    if family is not None and model_family(preset) != family:
        return False
    if search and search.strip():
        return _matches(search.strip().lower(), [preset.id, *preset.aliases, *(v.id for v in preset.variants)])
    return True


def gpu_matches(preset: HardwarePreset, *, search: str | None = None) -> bool:
    """True when ``search`` (if given) is a case-insensitive substring of the GPU's id, name or an alias."""
    if search and search.strip():
        return _matches(search.strip().lower(), [preset.id, preset.name, *preset.aliases])
    return True


def filter_models(
    models: Iterable[ModelPreset] | None = None, *, family: Family | str | None = None, search: str | None = None
) -> tuple[ModelPreset, ...]:
    """The model presets (default :func:`all_models`) that :func:`model_matches`; ``family`` may be CLI text."""
    fam = parse_family(family) if isinstance(family, str) else family
    return tuple(m for m in (all_models() if models is None else models) if model_matches(m, family=fam, search=search))


def filter_gpus(
    gpus: Iterable[HardwarePreset] | None = None, *, search: str | None = None
) -> tuple[HardwarePreset, ...]:
    """The hardware presets (default :func:`all_gpus`) that :func:`gpu_matches`."""
    return tuple(g for g in (all_gpus() if gpus is None else gpus) if gpu_matches(g, search=search))

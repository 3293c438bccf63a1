"""``kvplan models add``: a user model preset written from a local config.json (:func:`add_user_model`), validated
before it lands.

Example: ``add_user_model(Path("llama/config.json"), model_id="me/llama-ft")`` writes
``~/.config/kvplan/models/me--llama-ft.toml``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.inputs.presets.files import configs_dir, user_models_dir
from kvplan.inputs.presets.loading import _parse_toml, _read_preset_bytes, _validate
from kvplan.inputs.presets.lookup import clear_caches
from kvplan.inputs.presets.schema import QUANTIZATIONS, ModelPreset

# ---------------------------------------------------------------------------------- kvplan models add


class AddedModel:
    """What :func:`add_user_model` wrote (a plain class, as :class:`PresetEntry`)."""

    __slots__ = ("id", "path", "shadows")

    def __init__(self, *, path: Path, id: str, shadows: Path | None = None) -> None:
        self.path = path  # the new preset file
        self.id = id
        self.shadows = shadows  # the shipped preset file with the same id, which the new file now replaces


def _model_source(config: Path) -> tuple[Path, Path]:
    """(folder, config.json path) of ``config`` (a config.json or a model folder)."""
    p = config.expanduser()
    return (p, p / "config.json") if p.is_dir() else (p.parent, p)


def _default_id(raw_config: Any, folder: Path) -> str | None:
    """The id a config names itself by: ``_name_or_path``, else a Hugging Face cache folder's
    ``models--ORG--NAME`` (``.../models--Qwen--Qwen3-8B/snapshots/<rev>/config.json`` -> ``Qwen/Qwen3-8B``)."""
    name = raw_config.get("_name_or_path") if isinstance(raw_config, dict) else None
    if isinstance(name, str) and name.strip():
        return name.strip()
    for part in reversed(folder.absolute().parts):
        if part.startswith("models--") and part.count("--") == 2:
            return part[len("models--") :].replace("--", "/")
    return None


def _checked_id(model_id: str | None, default: str | None) -> str:
    from kvplan.inputs.hub import is_hub_id

    mid = (model_id or "").strip() or default
    if mid is None:
        raise InputError("config.json names no model id (_name_or_path)", field="--id", hint="pass --id ORG/NAME")
    if not is_hub_id(mid):
        where = "--id" if model_id else "config.json _name_or_path"
        raise InputError(
            f"{where} '{echo(mid)}' is not a Hugging Face id ORG/NAME", field="--id", hint="pass --id ORG/NAME"
        )
    return mid


def _checked_aliases(aliases: Sequence[str]) -> list[str]:
    out: list[str] = []
    for a in aliases:
        name = a.strip()
        if not name or any(ch in name for ch in "\n\r\t"):
            raise InputError(f"alias '{echo(a)}' must be a non-empty name on one line", field="--alias")
        if name not in out:
            out.append(name)
    return out


def _spec_of(config: Path) -> Any:
    """The ModelSpec of a local config.json / model folder (kvplan.inputs.resolve's readers), errors re-labelled
    for ``models add`` (they name the config field; the flag is the CONFIG argument, not --model)."""
    from kvplan.inputs.resolve import spec_from_path

    p = config.expanduser()
    if not p.exists():
        raise InputError(
            f"no such file or folder: {echo(config, 160)}", field="CONFIG", hint="give a config.json or a model folder"
        )
    try:
        return spec_from_path(p)
    except InputError as exc:
        raise InputError(str(exc), field="CONFIG", hint=exc.hint) from None


def _write_checked(target: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``target`` via a temporary file in the same folder that is loaded back and validated first
    (so a file that does not load never lands); InputError naming ``target`` when it does not load.  The file lands
    atomically (:func:`kvplan.inputs.preset_writer.install_preset`): without ``force`` an existing target, even one
    a concurrent writer just made, is an InputError "exists"."""
    from kvplan.hfconfig.spec import spec_from_config
    from kvplan.inputs.preset_writer import install_preset

    tmp = target.with_name(f".{target.name[:200]}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(
            f"cannot write {target} ({exc.strerror or exc})",
            field="models add",
            hint="check the folder's permissions or set KVPLAN_PRESETS",
        ) from None
    try:
        preset = _validate(ModelPreset, str(target), _parse_toml(str(target), _read_preset_bytes(tmp)))
        spec_from_config(preset.config, model_id=preset.id, source=str(target))  # plannable geometry
        install_preset(tmp, target, force=force)
    finally:
        tmp.unlink(missing_ok=True)


def add_user_model(
    config: Path,
    *,
    model_id: str | None = None,
    aliases: Sequence[str] = (),
    quantization: str | None = None,
    source: str | None = None,
    force: bool = False,
) -> AddedModel:
    """Write a user model preset from a local config.json (or a model folder holding one, with the optional
    ``model.safetensors.index.json`` and ``hf_quant_config.json`` :func:`kvplan.inputs.resolve.spec_from_path` reads).

    The file is ``<user models folder>/<org>--<name>.toml`` (:func:`user_models_dir`), its text made by
    :func:`kvplan.inputs.preset_writer.preset_toml`; it is loaded back and validated before it replaces anything.
    ``model_id`` defaults to the config's ``_name_or_path`` when that is an ``ORG/NAME`` id; ``quantization`` to the
    format the config (or hf_quant_config.json) declares; ``source`` to the config.json's absolute path.  An
    existing user file is replaced only with ``force``.  Every refusal is an InputError (exit 2) naming the field.

    Example: ``add_user_model(Path("llama/config.json"), model_id="me/llama-ft")`` writes
    ``~/.config/kvplan/models/me--llama-ft.toml`` and ``kvplan fit -m me/llama-ft`` plans it offline.
    """
    from kvplan.inputs.preset_writer import preset_file_name

    folder, _ = _model_source(Path(config))
    spec = _spec_of(Path(config))
    mid = _checked_id(model_id, _default_id(spec.raw_config, folder))
    quant = (quantization or "").strip().lower() or spec.quantization
    if quant not in QUANTIZATIONS:
        raise InputError(
            f"quantization '{echo(quant)}' must be one of {', '.join(QUANTIZATIONS)}", field="--quantization"
        )
    target = user_models_dir() / preset_file_name(mid)
    if target.exists() and not force:
        raise InputError(f"{target} exists", field="--force", hint="pass --force to overwrite it")
    _write_checked(
        target,
        _user_preset_text(
            Path(config),
            spec,
            model_id=mid,
            quantization=quant,
            given_quantization=bool(quantization),
            aliases=aliases,
            source=source,
        ),
        force=force,
    )
    clear_caches()
    shipped = configs_dir() / "models" / target.name
    return AddedModel(path=target, id=mid, shadows=shipped if shipped.is_file() else None)


def _user_preset_text(
    config: Path,
    spec: Any,
    *,
    model_id: str,
    quantization: str,
    given_quantization: bool,
    aliases: Sequence[str],
    source: str | None,
) -> str:
    """The preset text of ``kvplan models add`` (:func:`kvplan.inputs.preset_writer.preset_toml`): source the
    config.json's absolute path unless given, checkpoint size from the folder's safetensors index when read."""
    from kvplan.inputs.preset_writer import preset_toml

    folder, cfg_path = _model_source(config)
    hq = folder / "hf_quant_config.json"
    if given_quantization:
        weights_source: str | None = f"given with --quantization {quantization}"
    else:
        weights_source = f"{hq.name} and config.json in {folder.absolute()} -> {quantization}" if hq.is_file() else None
    return preset_toml(
        spec.raw_config,
        model_id=model_id,
        source=(source or "").strip() or f"local config.json {cfg_path.absolute()}",
        config_ref="local copy named in source",
        quantization=quantization,
        aliases=_checked_aliases(aliases),
        notes="Written by `kvplan models add` from a local config.json.",
        weights_source=weights_source,
        checkpoint_bytes=spec.checkpoint_bytes,
        checkpoint_source=f"metadata.total_size of model.safetensors.index.json in {folder.absolute()}",
    )

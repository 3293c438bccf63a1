"""Write a model preset (``configs/models/<org>--<name>.toml``) from a Hugging Face ``config.json`` dict.

The text is in the format of docs/presets.md: ``id``, ``aliases``, ``source``, ``notes``, a ``[weights]`` table, the
``[config]`` table holding the config.json fields kvplan reads (:data:`~kvplan.inputs.config_keys.CONFIG_KEYS`,
copied as they are), every ``[config]`` number with a trailing ``# unit; source`` comment, and the published
re-uploads that share the geometry as ``[[variants]]``.  What is not copied (keys outside CONFIG_KEYS, ``null``
values, very long per-layer ``quantization_config`` lists) is said in ``notes``.

Used by ``kvplan models add`` (:func:`kvplan.inputs.presets.add_user_model`) and by ``scripts/preset_from_config.py``;
it reads nothing and writes nothing itself.
The loader (:mod:`kvplan.inputs.presets`) reads the text back with ``tomllib`` and validates it strictly.

Example::

    >>> cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
    ...        "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 1024, "num_attention_heads": 16,
    ...        "vocab_size": 151936, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-06, "sliding_window": None}
    >>> text = preset_toml(cfg, model_id="Qwen/Qwen3-0.6B", source="my copy", quantization="bf16",
    ...                    config_ref="my copy")
    >>> "num_key_value_heads = 8  # heads; HF config.json, my copy" in text
    True
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.normalize import nemotron_h_layers
from kvplan.inputs.config_keys import CONFIG_KEYS, VISION_CONFIG_KEYS
from kvplan.inputs.presets.schema import QUANTIZATIONS as _QUANTIZATIONS  # the one list of weight formats

#: lists in ``quantization_config`` longer than this (per-layer ignore / modules_to_not_convert lists) are left
#: out; docs/presets.md "Rules for preset data".
MAX_QUANT_LIST = 32
#: a ``quantization_config`` sub-table with more keys than this (per-layer maps) is left out the same way
MAX_QUANT_TABLE = 32

# The unit word of a config.json field in its trailing comment; a field not listed takes the word of its type
# (flag / string / value).  One place: docs/presets.md shows the comment format.
_UNIT_KEYS: dict[str, tuple[str, ...]] = {
    "layers": (
        "num_hidden_layers",
        "first_k_dense_replace",
        "max_window_layers",
        "moe_layer_freq",
        "num_nextn_predict_layers",
        "full_attention_interval",
        "attn_layer_period",
        "attn_layer_offset",
        "expert_layer_period",
        "expert_layer_offset",
        "decoder_sparse_step",
        "sliding_window_pattern",
        "num_kv_shared_layers",
        "mlp_only_layers",
        "kv_source_layer_ids",
        "index_source_layer_ids",
        "engram_table_layers",
        "vision_n_layers",
        "index_topk_freq",
        "index_skip_topk_offset",
    ),
    "heads": (
        "num_attention_heads",
        "num_key_value_heads",
        "index_n_heads",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "mamba_num_heads",
        "swa_num_key_value_heads",
        "swa_num_attention_heads",
        "num_global_key_value_heads",
    ),
    "groups": ("n_groups", "o_groups"),
    "elements": (
        "hidden_size",
        "head_dim",
        "v_head_dim",
        "intermediate_size",
        "moe_intermediate_size",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "qk_head_dim",
        "index_head_dim",
        "o_lora_rank",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "mamba_head_dim",
        "ssm_state_size",
        "mamba_d_state",
        "swa_head_dim",
        "swa_v_head_dim",
        "global_head_dim",
        "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size",
        "moe_latent_size",
        "hidden_size_per_layer_input",
    ),
    "tokens": (
        "max_position_embeddings",
        "sliding_window",
        "sliding_window_size",
        "attention_chunk_size",
        "index_topk",
    ),
    "experts": (
        "n_routed_experts",
        "num_experts",
        "num_local_experts",
        "n_shared_experts",
        "num_experts_per_tok",
        "top_k_experts",
    ),
    "vocabulary entries": ("vocab_size", "vocab_size_per_layer_input"),
    "RoPE base": ("rope_theta",),
    "kernel width": ("conv_kernel", "linear_conv_kernel_dim", "mamba_d_conv"),
    "factor": ("expand", "mamba_expand", "hc_mult"),
}
UNITS: dict[str, str] = {k: unit for unit, keys in _UNIT_KEYS.items() for k in keys}

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass
class ConfigCopy:
    """The ``[config]`` table kvplan keeps of a config.json, and what was left out (for ``notes``)."""

    table: dict[str, Any]
    dropped_keys: list[str] = field(default_factory=list)  # keys outside CONFIG_KEYS (top level and text_config)
    null_keys: list[str] = field(default_factory=list)  # keys whose value is null
    trimmed: list[str] = field(default_factory=list)  # long quantization_config entries left out


def _strip_nulls(value: Any) -> Any:
    """``null`` has no TOML form: drop it from tables; a list that holds one cannot be written (None)."""
    if isinstance(value, Mapping):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return None if any(v is None for v in value) else [_strip_nulls(v) for v in value]
    return value


def _quant_copy(qc: Mapping[str, Any], where: str, out: ConfigCopy) -> dict[str, Any]:
    """``quantization_config`` without its very long per-layer lists and maps, at any depth (docs/presets.md)."""
    kept: dict[str, Any] = {}
    for k, v in qc.items():
        if v is None:
            continue
        if isinstance(v, list) and len(v) > MAX_QUANT_LIST:
            out.trimmed.append(f"{where}.{k} ({len(v)} entries)")
        elif isinstance(v, Mapping) and len(v) > MAX_QUANT_TABLE:
            out.trimmed.append(f"{where}.{k} ({len(v)} keys)")
        elif isinstance(v, Mapping):
            kept[k] = _quant_copy(v, f"{where}.{k}", out)
        else:
            stripped = _strip_nulls(v)
            if stripped is not None:
                kept[k] = stripped
    return kept


def _copy_level(cfg: Mapping[str, Any], where: str, out: ConfigCopy, *, keys: frozenset[str]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for k, v in cfg.items():
        name = f"{where}.{k}" if where else k
        if k not in keys:
            out.dropped_keys.append(name)
            continue
        if v is None:
            out.null_keys.append(name)
            continue
        if k == "quantization_config" and isinstance(v, Mapping):
            table[k] = _quant_copy(v, name, out)
        elif k == "text_config" and isinstance(v, Mapping):
            table[k] = _copy_level(v, name, out, keys=keys)
        elif k == "vision_config" and isinstance(v, Mapping):
            table[k] = {
                vk: vv
                for vk, vv in _strip_nulls(v).items()
                if vk in VISION_CONFIG_KEYS and not isinstance(vv, (Mapping, list))
            }
        else:
            stripped = _strip_nulls(v)
            if stripped is None:
                out.null_keys.append(name)
                continue
            table[k] = stripped
    return table


def config_copy(config: Mapping[str, Any]) -> ConfigCopy:
    """The fields of ``config`` a preset's ``[config]`` holds, as they are.

    Top-level and ``text_config`` keys outside CONFIG_KEYS are left out, ``null`` values are left out (TOML has no
    null; a list holding a null is left out whole), ``vision_config`` keeps its geometry scalars
    (VISION_CONFIG_KEYS), and ``quantization_config`` lists longer than MAX_QUANT_LIST are left out.

    Example: ``{"num_hidden_layers": 2, "rms_norm_eps": 1e-5, "rope_scaling": None}`` ->
    table ``{"num_hidden_layers": 2}``, dropped_keys ``["rms_norm_eps"]``, null_keys ``["rope_scaling"]``.
    """
    if not isinstance(config, Mapping):
        raise InputError("config.json must hold a JSON object", field="config")
    out = ConfigCopy(table={})
    out.table = _copy_level(config, "", out, keys=CONFIG_KEYS)
    if (
        "num_hidden_layers" not in out.table
        and "num_hidden_layers" not in out.table.get("text_config", {})
        and "num_hidden_layers" not in nemotron_h_layers(dict(out.table))
    ):
        raise InputError(
            "config.json has no num_hidden_layers", field="config", hint="pass the config.json of a decoder model"
        )
    return out


# ------------------------------------------------------------------------------------------------- TOML text


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def toml_value(v: Any) -> str:
    """One TOML value (inline form): ``True`` -> ``true``, ``1e-05`` -> ``1e-05``, ``{"a": 1}`` -> ``{ a = 1 }``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Mapping):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{_key(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise InputError(f"config value of type {type(v).__name__} has no TOML form", field="config")


def unit_of(key: str, value: Any) -> str:
    """The unit word of a ``[config]`` comment: ``num_key_value_heads`` -> heads, a bool -> flag."""
    if key in UNITS:
        return UNITS[key]
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(x, str) for x in value)):
        return "string"
    return "value"


def _table_lines(name: str, table: Mapping[str, Any], comment: str, *, depth: int) -> list[str]:
    """``[name]`` with its scalar keys, then its sub-tables (two levels as tables, deeper ones inline)."""
    lines = [f"[{name}]"]
    subs = []
    for k in sorted(table):
        v = table[k]
        if isinstance(v, Mapping) and depth < 3 and (v or depth < 2):
            subs.append(k)
            continue
        unit = unit_of(k, v) if name in ("config", "config.text_config") else "value"
        lines.append(f"{_key(k)} = {toml_value(v)}  # {unit}; {comment}")
    for k in subs:
        lines += ["", *_table_lines(f"{name}.{_key(k)}", table[k], comment, depth=depth + 1)]
    return lines


def weights_note(config: Mapping[str, Any], quantization: str) -> str:
    """Where ``[weights] quantization`` was read: ``quantization_config.quant_method = fp8`` or the dtype."""
    flat = dict(config)
    text = config.get("text_config")
    if isinstance(text, Mapping):
        flat.update(text)
    qc = flat.get("quantization_config")
    if isinstance(qc, Mapping) and qc:
        parts = [f"{k} = {qc[k]}" for k in ("quant_method", "quant_algo", "format") if qc.get(k)]
        return "[config] quantization_config: " + ", ".join(parts) + f" -> {quantization}"
    dtype = flat.get("torch_dtype") or flat.get("dtype") or "not given"
    return f"[config] torch_dtype/dtype = {dtype}, no quantization_config -> {quantization}"


def _notes(copy: ConfigCopy, notes: str) -> str:
    parts = [notes] if notes else []
    parts.append(
        "Fields outside kvplan's CONFIG_KEYS are not copied. Keys whose config.json value is null are left "
        "out (TOML has no null)."
    )
    if copy.trimmed:
        parts.append("Not copied (long per-layer lists; docs/presets.md): " + ", ".join(copy.trimmed) + ".")
    return " ".join(parts)


def _variant_lines(variants: Iterable[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for v in variants:
        if v.get("quantization") not in _QUANTIZATIONS:
            raise InputError(
                f"variant {v.get('id')!r}: quantization must be one of {', '.join(_QUANTIZATIONS)}", field="variants"
            )
        lines += [
            "",
            "[[variants]]",
            f"id = {toml_value(str(v['id']))}",
            f"quantization = {toml_value(v['quantization'])}",
        ]
        if v.get("checkpoint_bytes"):
            lines.append(
                f"checkpoint_bytes = {int(v['checkpoint_bytes']):_}  # B, checkpoint size; "
                f"{v.get('checkpoint_source') or v.get('source', '')}"
            )
        for k in ("source", "notes"):
            if v.get(k):
                lines.append(f"{k} = {toml_value(str(v[k]))}")
    return lines


def preset_toml(
    config: Mapping[str, Any],
    *,
    model_id: str,
    source: str,
    quantization: str,
    config_ref: str | None = None,
    aliases: Sequence[str] = (),
    notes: str = "",
    weights_source: str | None = None,
    weights_notes: str = "",
    checkpoint_bytes: int | None = None,
    checkpoint_source: str = "",
    variants: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The preset file text for ``config`` (a config.json dict).

    ``source`` says where the config.json was copied from (repository, path, commit, the HF id/revision it
    mirrors); ``config_ref`` is the short form every ``[config]`` comment repeats (default: ``source``).
    ``quantization`` is the weight format (one of presets.QUANTIZATIONS); ``variants`` are dicts with ``id``,
    ``quantization`` and optionally ``source``, ``notes``, ``checkpoint_bytes``.

    Example: ``preset_toml({"num_hidden_layers": 2, "model_type": "llama"}, model_id="a/b", source="s",
    quantization="bf16")`` has the lines ``id = "a/b"``, ``[config]``, ``model_type = "llama"  # string; HF
    config.json, s`` and ``num_hidden_layers = 2  # layers; HF config.json, s``.
    """
    if "/" not in model_id or model_id.startswith("/") or model_id.endswith("/"):
        raise InputError(f"model id {model_id!r} must be ORG/NAME (the Hugging Face id)", field="id")
    if quantization not in _QUANTIZATIONS:
        raise InputError(
            f"quantization {quantization!r} must be one of {', '.join(_QUANTIZATIONS)}", field="quantization"
        )
    copy = config_copy(config)
    ref = config_ref or source
    lines = [
        f"# Model preset: {model_id}",
        "# Format: docs/presets.md.  [config] holds Hugging Face config.json field names.",
        f"id = {toml_value(model_id)}",
        f"aliases = {toml_value(list(aliases))}",
        f"source = {toml_value(source)}",
        f"notes = {toml_value(_notes(copy, notes))}",
        "",
        "[weights]",
        f"quantization = {toml_value(quantization)}",
    ]
    if checkpoint_bytes:
        lines.append(f"checkpoint_bytes = {int(checkpoint_bytes):_}  # B, checkpoint size; {checkpoint_source}")
    lines.append(f"source = {toml_value(weights_source or weights_note(config, quantization))}")
    if weights_notes:
        lines.append(f"notes = {toml_value(weights_notes)}")
    lines += ["", *_table_lines("config", copy.table, f"HF config.json, {ref}", depth=1)]
    lines += _variant_lines(variants)
    return "\n".join(lines) + "\n"


def preset_file_name(model_id: str) -> str:
    """``Qwen/Qwen3-8B`` -> ``Qwen--Qwen3-8B.toml`` (the loader finds a preset by this name)."""
    return model_id.replace("/", "--") + ".toml"


def install_preset(tmp: Path, target: Path, *, force: bool) -> None:
    """Move the complete, validated file ``tmp`` to ``target`` atomically (``kvplan models add``).

    With ``force`` it replaces whatever is there (``os.replace``).  Without, the name is claimed with a hard link
    (``os.link`` fails with EEXIST when ``target`` exists, whoever wrote it a moment ago): of several concurrent
    writers of one id exactly one succeeds; the others get InputError "... exists" (exit 2), as a writer that
    found the file before it started does.  On a filesystem without hard links the name is claimed with
    ``O_CREAT | O_EXCL`` and then replaced.

    Example: 8 processes running ``kvplan models add cfg.json --id me/x`` at once: one prints the path, seven exit 2
    "me--x.toml exists".
    """
    import os

    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise _exists(target) from None
    except OSError:  # no hard links here (some network / FUSE filesystems): claim the name, then replace it
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            raise _exists(target) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def _exists(target: Path) -> InputError:
    return InputError(f"{target} exists", field="--force", hint="pass --force to overwrite it")

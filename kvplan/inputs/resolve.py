"""Resolve ``--model`` and ``--gpu``: a config.json path or model folder, a preset id or alias, a published variant,
or (for Hugging Face ids that are not presets) the Hub.  Model code is never imported or executed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError, echo
from kvplan.hfconfig.checks import hf_quant_warnings
from kvplan.hfconfig.spec import ModelSpec, quant_from_hf_quant_config, spec_from_config
from kvplan.inputs.read import PATH_CHARS, max_elements_of, read_json

if TYPE_CHECKING:
    from kvplan.inputs.presets import HardwarePreset, ModelPreset, Variant

_VARIANT_SUFFIXES = [
    # (regex on the name part, quantization it implies or None)
    (r"-FP8-dynamic$", "fp8"),
    (r"-FP8-Dynamic$", "fp8"),
    (r"-FP8$", "fp8"),
    (r"-fp8$", "fp8"),
    (r"-NVFP4$", "nvfp4"),
    (r"-MXFP4$", "mxfp4"),
    (r"-AWQ$", "int4"),
    (r"-awq$", "int4"),
    (r"-GPTQ(-Int4)?$", "int4"),
    (r"-GPTQ-Int8$", "int8"),
    (r"-Int4$", "int4"),
    (r"-int4$", "int4"),
    (r"-W4A16$", "int4"),
    (r"-W8A8$", "int8"),
    (r"-INT8$", "int8"),
    (r"-bnb-4bit$", "int4"),
    (r"-Instruct$", None),
    (r"-instruct$", None),
    (r"-Chat$", None),
    (r"-it$", None),
    (r"-Base$", None),
    (r"-Thinking$", None),
]
# No date-suffix rule (``-2507``): a dated re-release is a new checkpoint whose config may differ in a field kvplan
# reads (Qwen3-30B-A3B-Instruct-2507: 262,144 positions, the base preset 40,960), so it is never mapped to the
# undated preset; without its own preset it is read from the Hub (issue 24 item 3).


_CONFIG_HINT = "pass a Hugging Face config.json"


def _read_json(path: Path, what: str) -> Any:
    """A JSON file of a model folder through the bounded reader (regular file, at most 64 MiB, strict UTF-8, the
    JSON limits of :mod:`kvplan.inputs.read`)."""
    return read_json(
        path, field="--model", what=what, where=path.name, hint=_CONFIG_HINT, max_elements=max_elements_of(path.name)
    )


def _index_total(idx: Path) -> int | None:
    """``metadata.total_size`` of a safetensors index (None when it holds no positive size under 2^60)."""
    data = _read_json(idx, "a safetensors index")
    meta = data.get("metadata") if isinstance(data, dict) else None
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool) and 0 < total < 2**60:
        return int(total)
    return None


def spec_from_path(path: Path) -> ModelSpec:
    """A config.json file, or a model folder with config.json (and model.safetensors.index.json,
    hf_quant_config.json).  Every file is read by the bounded reader: a FIFO, a device or an oversized file is
    refused (exit 2) without being read; a present but unreadable optional file is refused too."""
    is_dir = path.is_dir()
    folder = path if is_dir else path.parent
    cfg_path = path / "config.json" if is_dir else path
    if is_dir and not os.path.lexists(cfg_path):
        raise InputError(
            f"{echo(str(path), PATH_CHARS)} has no config.json",
            field="--model",
            hint="point --model at a model folder or config.json",
        )
    cfg = _read_json(cfg_path, "a config.json")
    if not isinstance(cfg, dict):
        raise InputError(f"{cfg_path.name} must hold a JSON object", field="--model")
    notes: list[str] = []
    ckpt = None
    idx = folder / "model.safetensors.index.json"
    if is_dir and os.path.lexists(idx):
        ckpt = _index_total(idx)
        if ckpt is not None:
            notes.append(f"weights: {idx.name} total_size = {ckpt:,} B")
    quant = None
    warnings: list[str] = []
    hq = folder / "hf_quant_config.json"
    if os.path.lexists(hq):
        hq_data = _read_json(hq, "an hf_quant_config.json")
        quant, kv_algo = quant_from_hf_quant_config(hq_data)
        warnings += hf_quant_warnings(hq_data)
        if kv_algo and "kv_cache_quant_algo" not in cfg:
            cfg = {**cfg, "kv_cache_quant_algo": kv_algo}
    name = cfg.get("_name_or_path") or (folder.name if is_dir else str(path))
    return spec_from_config(
        cfg,
        model_id=str(name),
        source=f"config.json: {cfg_path}",
        quantization=quant,
        checkpoint_bytes=ckpt,
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def norm_name(s: str) -> str:
    """Case- and punctuation-blind form of a model or GPU name, for lookups."""
    return "".join(ch for ch in s.lower() if ch.isalnum())


def _preset_spec(
    preset: ModelPreset, *, variant: Variant | None = None, requested: str | None = None, note: str | None = None
) -> ModelSpec:
    """The ModelSpec of a preset (or of one of its published variants: same geometry, own weights)."""
    w = preset.weights
    quant = variant.quantization if variant else w.quantization
    ckpt = variant.checkpoint_bytes if variant else w.checkpoint_bytes
    notes = []
    if variant:
        notes.append(f"{variant.id}: a published variant of {preset.id} (same geometry), weights {quant}")
    if note:
        notes.append(note)
    mid = variant.id if variant else (requested if requested and note else preset.id)
    return spec_from_config(
        preset.config,
        model_id=mid,
        source=f"preset {preset.id} ({preset.source})",
        quantization=quant,
        checkpoint_bytes=ckpt,
        notes=tuple(notes),
        preset_id=preset.id,
    )


def _from_path(text: str) -> ModelSpec | None:
    """A config.json file or model folder; None when ``text`` does not name one (InputError when it looks like a
    path that does not exist)."""
    p = Path(text).expanduser()
    if os.path.lexists(p):  # False, not OSError, for a name too long to be a path
        return spec_from_path(p)
    if text.endswith(".json") or text.startswith((".", "/", "~")):
        raise InputError(f"no such file or folder: {echo(text, PATH_CHARS)}", field="--model")
    return None


def _by_name(text: str, models: tuple[ModelPreset, ...]) -> ModelSpec | None:
    """A preset by id or alias, or a published variant by its id (case- and punctuation-blind)."""
    key = norm_name(text)
    for m in models:
        if norm_name(m.id) == key or any(norm_name(a) == key for a in m.aliases):
            return _preset_spec(m)
        for v in m.variants:
            if norm_name(v.id) == key:
                return _preset_spec(m, variant=v)
    return None


def _strip_suffix(name: str) -> tuple[str, str | None] | None:
    """``name`` without its first matching variant suffix and the quantization it implies; None if none matches."""
    for pat, q in _VARIANT_SUFFIXES:
        new = re.sub(pat, "", name)
        if new != name:
            return new, q
    return None


def _by_variant_rules(text: str, models: tuple[ModelPreset, ...]) -> ModelSpec | None:
    """A published quantized build by rule: strip up to four quantization suffixes (``Qwen/Qwen3-32B-AWQ`` ->
    ``Qwen/Qwen3-32B``, int4) and match the base name against the presets of the same organisation.

    Only quantization suffixes, and only within the organisation that released the base (an id typed without an
    organisation matches any): a release suffix (``-Instruct``, ``-Base``, ``-Thinking``, ``-it``, ``-Chat``) or a
    date names another checkpoint whose config differs in fields kvplan reads (Qwen/Qwen2.5-7B-Instruct: 32,768
    positions, Qwen/Qwen2.5-7B 131,072), and another organisation's build is often re-made (nvidia/GLM-5.1-NVFP4's
    ``head_dim`` differs from zai-org/GLM-5.1's).  Such an id without a preset of its own is read from the Hub.
    tests/test_model_id_mapping.py checks the rule over the catalog."""
    org, _, name = text.rpartition("/")
    quant = None
    stripped = name
    for _ in range(4):
        step = _strip_suffix(stripped)
        if step is None or step[1] is None:
            return None
        stripped, q = step
        quant = quant or q
        for m in models:
            cands = [m.id, *m.aliases]
            if any(
                norm_name(c.rpartition("/")[2]) == norm_name(stripped)
                and (not org or norm_name(c.rpartition("/")[0]) == norm_name(org))
                for c in cands
            ):
                spec = _preset_spec(
                    m,
                    requested=text,
                    note=f"{text} resolved to the geometry of preset {m.id}"
                    + (f" with {quant} weights" if quant else ""),
                )
                spec = ModelSpec(**{**spec.__dict__, "quantization": quant, "checkpoint_bytes": None})
                return spec
    return None


#: the weight format each engine ``--quantization`` word implies (SGLang 0.5.x ``server_args.py`` QUANTIZATION_CHOICES,
#: vLLM ``model_executor/layers/quantization`` QUANTIZATION_METHODS): online fp8 quantizes a 16-bit checkpoint's
#: linear weights to fp8 at load; the others read a checkpoint already in that format
ENGINE_QUANTIZATION = {
    "fp8": "fp8",
    "w8a8_fp8": "fp8",
    "modelopt_fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "ptpc_fp8": "fp8",
    "fp_quant": "fp8",
    "mxfp8": "fp8",
    "w8a8_int8": "int8",
    "awq": "int4",
    "awq_marlin": "int4",
    "gptq": "int4",
    "gptq_marlin": "int4",
    "marlin": "int4",
    "moe_wna16": "int4",
    "w4afp8": "int4",
    "mxfp4": "mxfp4",
    "modelopt_fp4": "nvfp4",
    "petit_nvfp4": "nvfp4",
}


#: the words both engines apply to a 16-bit checkpoint at load (SGLang ``layers/quantization/fp8.py`` and vLLM's
#: ``Fp8Config`` quantize the linear weights to fp8 when the checkpoint is not serialized in fp8)
ONLINE_QUANTIZATION = frozenset({"fp8"})


def with_quantization(spec: ModelSpec, word: str | None) -> tuple[ModelSpec, str | None]:
    """``spec`` with the weight format the engine's ``--quantization word`` implies (:data:`ENGINE_QUANTIZATION`) and
    the assumption line that says so; ``spec`` unchanged for None, ``auto`` / ``unquant`` or the format it already
    has.  InputError (exit 2) for a word kvplan cannot map.  Example: Llama-3.1-8B (bf16) with ``fp8`` -> its
    linear weights fp8 (the plan's weight estimate and the speed model's fp8 GEMMs), "--quantization fp8: weights
    planned as fp8 (quantized at load from bf16)"."""
    if not word or word.strip().lower() in ("auto", "unquant", "none"):
        return spec, None
    w = word.strip().lower()
    fmt = ENGINE_QUANTIZATION.get(w)
    if fmt is None:
        raise InputError(
            f"unknown quantization {word[:40]!r}",
            field="--quantization",
            hint="one of " + ", ".join(sorted(ENGINE_QUANTIZATION)),
        )
    if fmt == spec.quantization:
        return spec, f"--quantization {w}: the checkpoint is already {fmt}"
    new = ModelSpec(**{**spec.__dict__, "quantization": fmt, "checkpoint_bytes": None})
    how = (
        f"quantized at load from {spec.quantization}"
        if w in ONLINE_QUANTIZATION
        else f"the engine reads a checkpoint in that format; the config's is {spec.quantization}"
    )
    return new, f"--quantization {w}: weights planned as {fmt} ({how})"


def _unknown_model(text: str, models: tuple[ModelPreset, ...]) -> ModelSpec:
    """Not a path nor a preset: the Hub for a Hugging Face id, else an InputError with the closest names."""
    import difflib

    from kvplan.inputs import hub

    choices = [m.id for m in models] + [a for m in models for a in m.aliases]
    close = difflib.get_close_matches(text, choices, n=3, cutoff=0.5) or difflib.get_close_matches(
        text.lower(), [c.lower() for c in choices], n=3, cutoff=0.5
    )
    hint = ("did you mean " + ", ".join(close) + "?") if close else "run `kvplan models`, or pass a config.json path"
    if hub.is_hub_id(text):
        # not a preset: ask the Hugging Face Hub for its config.json (cached; HF_HUB_OFFLINE respected)
        try:
            return hub.spec_from_hub(text)
        except InputError as exc:
            if exc.field != "--model":  # a hub setting (HF_ENDPOINT, KVPLAN_HUB_TIMEOUT ...) is the mistake
                raise
            raise InputError(
                f"unknown model '{echo(text)}': not a preset, and {exc}", field="--model", hint=hint
            ) from None
    raise InputError(f"unknown model '{echo(text)}'", field="--model", hint=hint)


def resolve_model(text: str) -> ModelSpec:
    """Resolve ``--model``: a path, a preset id or alias, a published variant, else the Hub or a helpful error.

    Order: an existing path (or one that looks like a path: InputError when missing), the preset file named by the
    id, a preset id / alias / variant id by name, the published-variant suffix rules, the Hub.
    """
    from kvplan.inputs.presets import loading, lookup  # the modules, not the package face (no import cycle)

    if not text or not text.strip():
        raise InputError("empty model", field="--model", hint="run `kvplan models` for the presets")
    text = text.strip()
    spec = _from_path(text)
    if spec is not None:
        return spec
    # the preset file named by the id (only for text that can be a file name: no NUL, no part over 200 characters,
    # where looking it up would raise instead of missing)
    if "\0" not in text and all(len(part) <= 200 for part in text.split("/")):
        f = lookup.model_file_for(text)
        if os.path.isfile(f):
            return _preset_spec(loading.load_model_file(f))
    models = lookup.all_models()
    spec = _by_name(text, models) or _by_variant_rules(text, models)
    return spec if spec is not None else _unknown_model(text, models)


def resolve_gpu(text: str) -> HardwarePreset:
    """Resolve ``--gpu``: a hardware preset id, its name as nvidia-smi / rocm-smi print it, or an alias."""
    from kvplan.inputs.presets import loading, lookup  # the modules, not the package face (no import cycle)

    if not text or not text.strip():
        raise InputError("empty GPU name", field="--gpu", hint="run `kvplan gpus`")
    key = norm_name(text)
    if "/" not in text and os.path.isfile(f := lookup.gpu_file_for(text.strip())):
        g = loading.load_hardware_file(f)  # --gpu ID: its own file, without reading every preset
        if norm_name(g.id) == key:
            return g
    gpus = lookup.all_gpus()
    for g in gpus:
        if key in {norm_name(g.id), norm_name(g.name), *(norm_name(a) for a in g.aliases)}:
            return g
    import difflib

    choices = [g.id for g in gpus] + [g.name for g in gpus] + [a for g in gpus for a in g.aliases]
    close = difflib.get_close_matches(text, choices, n=3, cutoff=0.5)
    hint = (
        ("did you mean " + ", ".join(dict.fromkeys(close)) + "?")
        if close
        else "run `kvplan gpus`, or give --gpu-memory SIZE"
    )
    raise InputError(f"unknown GPU '{echo(text)}'", field="--gpu", hint=hint)

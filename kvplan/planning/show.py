"""``kvplan show MODEL``: geometry and KV bytes per token per GPU by dtype and TP (SGLang 0.5.23 rules), the
per-layer-type breakdown, and vLLM's KV-cache groups.

The per-family rows come from the family's SGLang pool planner (``POOL_PLANNERS[family].breakdown``), the same
planner ``kvplan fit`` sizes the pools with.  Above them (``info``):

* ``layer_types``: one entry per layer type (full attention, sliding window, chunked local, MLA, indexer, Mamba
  state ...) with its layer count and bytes per token per layer at TP1 in the engines' default KV dtype on the
  GPU (vLLM's specs, :func:`kvplan.engines.vllm.specs.build_model_kv`; SGLang's hybrid-SWA rows where it prices
  them, :func:`kvplan.engines.sglang.pools.swa.swa_bytes_per_layer_token`), and the KV-sharing layers (vLLM gives
  them no KV; SGLang 0.5.23 still reserves their rows);
* ``vllm_groups``: vLLM's groups (page unification, group size, padding layers) at TP1,
  :func:`kvplan.engines.vllm.grouping.kv_groups`;
* what depends on the GPU (``-g``): each engine's default KV dtype (SGLang ``configure_kv_cache_dtype``, vLLM's
  checkpoint / platform rule), SGLang's default page size (the attention backend it picks by SM), vLLM's MLA/DSA
  row layout by SM.  Without ``-g`` those are the engines' rules for an unknown GPU (no SM).

Example: DeepSeek-V3.2 under vLLM: fp8 sparse-MLA rows of 656 B (``fp8_ds_mla``, FlashMLA-sparse: SM90) on an
H100 and 576 B (``fp8``, FlashInfer-MLA-sparse: the SM100 default) on a B200.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.engines.vllm.specs import ModelKV
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset


def _kind_name(kind: str) -> str:
    """The name ``show`` gives a vLLM spec kind (its ``label`` in :data:`kvplan.engines.vllm.specs.LAYER_KINDS`)."""
    from kvplan.engines.vllm.specs import kind_label

    return kind_label(kind)


def show_rows(model_text: str, gpu_text: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from kvplan.engines.sglang.pools import POOL_PLANNERS
    from kvplan.family import family_or_none
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    m = resolve_model(model_text)
    gpu = resolve_gpu(gpu_text) if gpu_text else None
    info: dict[str, Any] = {
        "model": m.id,
        "family": m.family,
        "architecture": m.architecture,
        "layers": m.num_layers,
        "context_length": m.context_length,
        "weights": m.quantization,
        "source": m.source,
    }
    if m.notes:
        info["notes"] = " ".join(m.notes)
    info.update(gpu_defaults(m, gpu))
    vllm_model = _vllm_model(m, gpu, info)
    info["layer_types"] = layer_type_rows(m, gpu, vllm_model, str(info.get("sglang_kv_cache_dtype", "bf16")))
    if vllm_model is not None:
        info["vllm_groups"] = vllm_group_rows(
            vllm_model,
            info,
            sm_major=gpu.sm_major if gpu is not None else None,
            config=m.raw_config or m.config,
            vendor=gpu.vendor if gpu is not None else "nvidia",
        )
    fam = family_or_none(m.family)
    planner = POOL_PLANNERS.get(fam) if fam is not None else None
    if planner is None:
        info["note"] = f"{m.family} models: per-layer-group breakdown not yet available"
        return info, []
    part = planner.breakdown(m)
    info.update(part.info)
    return info, part.rows


def gpu_defaults(m: ModelSpec, gpu: HardwarePreset | None) -> dict[str, Any]:
    """What the engines pick by GPU for this model: the GPU, its SM, SGLang's default KV dtype and page size.

    Example: Gemma-4 26B-A4B: SGLang page 64 on a B200 (trtllm_mha on SM100), 1 on an H100 (triton).
    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_dtype.py ``configure_kv_cache_dtype``,
    arg_groups/model_overrides (the attention backend by SM), v0.5.23; kvplan.engines.sglang.rules
    ``default_page_size``.
    """
    from kvplan.engines.sglang.kvdtype import attention_family, resolve_kv_cache_dtype
    from kvplan.engines.sglang.page_query import PageQuery
    from kvplan.engines.sglang.releases import DEFAULT_RULES

    sm = gpu.sm_major if gpu is not None else None
    vendor = gpu.vendor if gpu is not None else "nvidia"
    out: dict[str, Any] = {
        "gpu": f"{gpu.name} (SM{sm}x)"
        if gpu is not None and sm
        else (gpu.name if gpu is not None else "none given (the engines' rules for an unknown GPU)")
    }
    fam = attention_family(family=m.family, config=m.config)
    try:
        out["sglang_kv_cache_dtype"] = resolve_kv_cache_dtype(
            requested="auto",
            model_dtype=m.model_dtype,
            kv_cache_quant_algo=m.kv_cache_quant_algo,
            family=fam,
            sm_major=sm,
            vendor=vendor,
        )
        out["sglang_page_size"] = DEFAULT_RULES.default_page_size(
            PageQuery(family=fam, attention_backend=None, sm_major=sm, vendor=vendor)
        )
    except InputError as e:  # the engine refuses this model on this GPU: say so instead of a number
        out["sglang_kv_cache_dtype"] = f"refused: {e}"
    return out


def _vllm_model(m: ModelSpec, gpu: HardwarePreset | None, info: dict[str, Any]) -> ModelKV | None:
    """vLLM's per-rank specs at TP1 on the GPU (its default KV dtype), or None with the refusal in ``info``."""
    from kvplan.engines.vllm.specs import build_model_kv

    try:
        model = build_model_kv(
            config=m.raw_config or m.config,
            tp_size=1,
            kv_cache_dtype="auto",
            sm_major=gpu.sm_major if gpu is not None else None,
        )
    except InputError as e:
        info["vllm"] = f"refused: {e}"
        return None
    kvd = next(
        (n.split(" to ", 1)[1] for n in model.notes if n.startswith("kv_cache_dtype auto resolved to ")),
        "auto (the model dtype)",
    )
    info["vllm_kv_cache_dtype"] = kvd
    return model


def layer_type_rows(
    m: ModelSpec, gpu: HardwarePreset | None, vllm_model: ModelKV | None, sglang_kv_dtype: str
) -> list[dict[str, Any]]:
    """One entry per layer type: layers, bytes per token per layer at TP1 (vLLM; SGLang's hybrid-SWA cell rows),
    window, KV-sharing layers.

    Example: Gemma-4 26B-A4B bf16: full attention 5 layers x 4,096 B (2 x (512 + 512) x 2), sliding window 25 x
    8,192 B (8 x (256 + 256) x 2), the same in both engines.
    """
    from kvplan.geometry.layers import kv_shared_layers

    cfg = m.config
    shared = kv_shared_layers(cfg, m.num_layers) if isinstance(cfg, Mapping) else frozenset()
    rows: dict[str, dict[str, Any]] = {}
    if vllm_model is not None:
        for x in vllm_model.layers:
            name = _kind_name(x.kind)
            r = rows.setdefault(
                name, {"layer_type": name, "layers": 0, "vllm_bytes_per_token_layer": None, "window": x.window}
            )
            r["layers"] += 1
            per = x.state_bytes if x.kind == "mamba" else x.token_bytes
            r["vllm_bytes_per_token_layer"] = per if x.kind != "mamba" else f"{per:,} B per request state"
    for name, per, n in _sglang_swa_rows(m, sglang_kv_dtype):
        r = rows.setdefault(name, {"layer_type": name, "layers": n, "vllm_bytes_per_token_layer": None, "window": None})
        r["sglang_layers"] = n
        r["sglang_bytes_per_token_layer"] = per
    out = list(rows.values())
    if shared:
        out.append(
            {
                "layer_type": "KV-sharing (reads an earlier layer's cache)",
                "layers": len(shared),
                "layer_ids": f"{min(shared)}-{max(shared)}",
                "vllm_bytes_per_token_layer": "0 (no spec: vLLM skips kv_sharing_target_layer_name layers)",
                "sglang_bytes_per_token_layer": "reserved: counted in the pool, never written (SGLang 0.5.23)",
            }
        )
    return out


def _sglang_swa_rows(m: ModelSpec, kv_dtype: str) -> list[tuple[str, int, int]]:
    """(layer type, SGLang bytes per token per layer at TP1, layers) of a hybrid-SWA model; [] otherwise."""
    from kvplan.family import Family, family_or_none

    if family_or_none(m.family) is not Family.HYBRID_SWA or kv_dtype.startswith("refused"):
        return []
    from kvplan.engines.sglang.pools.swa import swa_bytes_per_layer_token, swa_layers_from_config

    L = swa_layers_from_config(m.raw_config or m.config)
    from kvplan.hfconfig.dtypes import DType, dtype_named

    # the FP4 recipes are shown at bf16 width in these rows (unchanged); the pool formula takes the resolved member
    kd = dtype_named(kv_dtype)
    dt = DType.BF16 if kd in (DType.NVFP4, DType.FP4_MX_BLOCK16) else kd
    out = []
    for name, n, heads, hd, vhd in (
        ("full attention", len(L.full_layers), L.full_kv_heads, L.full_head_dim, L.full_v_head_dim),
        ("sliding window", len(L.swa_layers), L.swa_kv_heads, L.swa_head_dim, L.swa_v_head_dim),
    ):
        if n:
            name = "MLA" if L.latent and name == "full attention" else name
            out.append(
                (
                    name,
                    swa_bytes_per_layer_token(
                        kv_heads=heads, head_dim=hd, v_head_dim=vhd, attn_tp_size=1, kv_dtype=dt, latent=L.latent
                    ),
                    n,
                )
            )
    return out


def vllm_group_rows(
    model: ModelKV,
    info: dict[str, Any],
    *,
    sm_major: int | None = None,
    config: Mapping[str, Any] | None = None,
    vendor: str = "nvidia",
) -> list[dict[str, Any]]:
    """vLLM's KV-cache groups at TP1 on a GPU of SM ``sm_major`` (None: unknown): kind, layers, block size, page
    bytes; the padding lines go to ``info["vllm_padding"]``, an MLA hybrid's backend and alignment to
    ``info["vllm_hybrid_alignment"]`` (:func:`kvplan.engines.vllm.grouping.hybrid_alignment`, the planner's rule).

    Example: Gemma-4 26B-A4B, vLLM 0.34: six groups of five layers (one full, five sliding), full block 32 after
    page unification (4,096 B x 32 = 8,192 B x 16 = 131,072 B).  A Kimi-Linear-class MLA hybrid: the attention block
    is aligned to the MLA backend vLLM picks on the GPU (0.34: at least 128).  Gemma-4 (``config`` given): the
    backend and starting blocks of :func:`kvplan.engines.vllm.gemma4.vllm_gemma4_attention` (H100 with fp8: 64),
    named in ``info["vllm_attention_backend"]``.
    """
    from kvplan.engines.vllm.grouping import align_hybrid_pages, hybrid_alignment, kv_groups
    from kvplan.engines.vllm.releases import NEWEST_VERSION, release_for, release_numbers

    rel = release_for(None)
    block, _ = rel.block_size(model.family, None)
    warnings: list[str] = []
    if config is not None:
        from kvplan.engines.vllm import gemma4
        from kvplan.hfconfig.normalize import flatten_config

        cfg = flatten_config(config, engine="vllm")
        if gemma4.is_gemma4(cfg):
            kv = "fp8" if model.kv_dtype_bytes == 1 else "auto"
            att = gemma4.vllm_gemma4_attention(
                sm_major=sm_major, vendor=vendor, kv_cache_dtype=kv, prefix=gemma4.mm_prefix(cfg)
            )
            layout = gemma4.gemma4_layout(model, attention=att)
            model, block = layout.model, layout.block_size or block
            info["vllm_attention_backend"] = layout.assumption
    if model.max_mamba_state_bytes:
        align = hybrid_alignment(
            model, block_size=block, engine_version=release_numbers(NEWEST_VERSION), sm_major=sm_major
        )
        if align.note:
            info["vllm_hybrid_alignment"] = align.note
        model, block = align_hybrid_pages(model, block_size=block, warnings=warnings, align=align)
    try:
        groups = kv_groups(model, block, warnings, rel)
    except InputError as e:
        info["vllm_padding"] = f"refused: {e}"
        return []
    info["vllm_block_size"] = block
    pads = [w for w in warnings if w.startswith("Add ")]
    info["vllm_padding"] = "; ".join(pads) if pads else "no padding layers"
    return [
        {
            "group": i,
            "kind": _kind_name(g.kind),
            "layers": len(g.layers),
            "block_size": g.block_size,
            "bytes_per_block": g.bytes_per_block(),
        }
        for i, g in enumerate(groups)
    ]

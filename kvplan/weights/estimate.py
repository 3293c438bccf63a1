"""Per-GPU weight footprint, sharded the way SGLang (and vLLM) shard it.

kvplan's KV budget is "free memory after weights - reserve".  When the user gives no
measured weight load (SGLang ``Load weight end ... mem usage=``, vLLM ``Model loading
took``), this module estimates the bytes of weights that the *largest* rank holds,
because both engines size the KV pool from the minimum free memory over ranks.

Method
------
1. :func:`kvplan.weights.inventory.inventory` enumerates every weight tensor of the model from its Hugging Face
   ``config.json`` (flattened by :mod:`kvplan.hfconfig.normalize` with the engine's rule), after checking the
   fields it reads (:mod:`kvplan.weights.fields`: a config it cannot read is an InputError naming the field).
2. Each tensor carries (a) the component it belongs to, (b) its Hugging Face module path
   (so ``ignore`` / ``modules_to_not_convert`` / ``exclude_modules`` lists apply), (c) how
   the engine shards it, and (d) whether it is a Linear weight the checkpoint's scheme can
   quantize (:mod:`kvplan.weights.tensor`).
3. Bytes of a tensor on one rank = its per-rank shape (:mod:`kvplan.weights.sharding`) priced by the storage
   scheme (:mod:`kvplan.weights.quant`).  ``per_gpu_bytes`` = the largest pipeline stage's sum.
4. With ``checkpoint_bytes`` (safetensors ``metadata.total_size``), the same model gives
   the fraction of the checkpoint that the largest rank holds; the per-GPU estimate is
   ``checkpoint_bytes * per_gpu_model / checkpoint_model`` (so the absolute size comes from
   the checkpoint, the sharding from the structure; MTP layers that are not loaded drop out).

What is loaded (SGLang v0.5.23, sgl-project/sglang python/sglang/srt/...):

* ``models/deepseek_common/deepseek_weight_loader.py do_load_weights``: with speculative
  decoding off (NextNDisabledConfig) layers >= num_hidden_layers (the MTP layer) are skipped;
  ``models/deepseek_v4.py load_weights`` likewise skips ``mtp.*``.
* ``deepseek_weight_loader.py post_load_weights``: MLA keeps kv_b_proj and adds w_kc / w_vc,
  a bf16 copy of the rank's kv_b_proj (block-fp8 dequantized on CUDA).
* ``layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16_moe.py`` (v0.5.9): on ROCm the WNA16
  MoE keeps its int32 act-order buffers next to the packed experts
  (:func:`kvplan.weights.kernels.wna16_moe_index_bytes`; ``gpu_vendor="amd"``).
* ``layers/engram.py EngramEmbedding.__init__``: DeepSeek-V4.1 engram tables are fp8 rows
  (+ one e8m0 scale per 32) split by rows over TP, or kept in host memory with
  ``SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1`` (``srt/environ.py``).

Everything is integer bytes.  No engine code is copied; the rules are restated.

The names this module has always exported stay importable from here: ``count_params`` (inventory),
``quantization_from_config`` (kvplan.hfconfig.quant), ``scheme_bytes`` (quant), ``MXFP4_EXPERT_PADDING`` and
``pp_layer_ranges`` (sharding / kvplan.parallel), ``flatten_config``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.normalize import flatten_config as _normalize
from kvplan.hfconfig.quant import quantization_from_config
from kvplan.hfconfig.readers import int_at_least, is_int
from kvplan.parallel import pp_layer_ranges
from kvplan.units import GiB as GIB
from kvplan.weights import ESTIMATE_REVISION  # re-exported: the one definition is the package's
from kvplan.weights.blocks import num_experts
from kvplan.weights.draft import DraftLoad, draft_load
from kvplan.weights.engram import EngramPlacement, placement_note
from kvplan.weights.fields import need_int, opt_int
from kvplan.weights.inventory import Inventory, count_params, inventory
from kvplan.weights.kernels import (
    TritonExtras,
    triton_expert_extra_bytes,
    vllm_mxfp4_backend,
    vllm_triton_extras,
    wna16_moe_index_bytes,
)
from kvplan.weights.quant import (
    Patterns,
    QuantPlan,
    Scheme,
    compressed_tensors_wna16,
    ignored,
    plan_quantization,
    scheme_bytes,
    storage_bytes,
)
from kvplan.weights.rules import weight_rules
from kvplan.weights.sharding import (
    MXFP4_EXPERT_PADDING,
    VOCAB_PAD,
    Sharding,
    check_parallel,
    expert_padding_multiples,
    plan_sharding,
    pp_lm_head,
    rank_shape,
    stages_of,
)
from kvplan.weights.tensor import Group, Stage, Tensor

__all__ = [
    "ESTIMATE_REVISION",
    "MXFP4_EXPERT_PADDING",
    "VOCAB_PAD",
    "WeightEstimate",
    "count_params",
    "estimate_weight_bytes",
    "flatten_config",
    "pp_layer_ranges",
    "quantization_from_config",
    "scheme_bytes",
]

_LATENT = (Family.MLA, Family.DSA)  # MLA attention: the absorbed w_kc / w_vc copy
#: expert :class:`kvplan.weights.quant.Scheme` names of MXFP4 MoE weights, whose kernels may pad expert buffers (a
#: storage-scheme word: E2M1 values + e8m0 scale per 32, SGLang v0.5.23 layers/quantization/mxfp4.py; the padding
#: per vLLM backend is :func:`kvplan.weights.kernels.vllm_mxfp4_backend`)
_MXFP4_EXPERT_SCHEMES = ("mxfp4",)
#: the one-tensor towers of kvplan.weights.inventory (generic ViT, DeepSeek-V4.1); any other vision path is a tower
#: kvplan.weights.vision builds module by module
_GENERIC_VISION_PATHS = ("vision_tower", "vision_tower.norms")

# the names tests/test_properties.py reads from this module
_ignored = ignored
_Patterns = Patterns


@dataclass(frozen=True)
class WeightEstimate:
    per_gpu_bytes: int  # the largest rank's weight bytes (what the engine's MIN-over-ranks budget sees)
    total_bytes: int  # whole model as loaded (every rank's share, replicas counted once)
    params: int  # total parameters counted (as in the checkpoint, MTP and engram included)
    method: str  # "checkpoint" | "params"
    breakdown: tuple[tuple[str, int], ...]  # (component, per-GPU bytes) on the largest rank
    notes: tuple[str, ...]  # every assumption, human readable
    host_bytes: int = 0  # pinned host memory the engine fills with weights (engram host table), not on the GPU
    allocator_reserve_bytes: int = 0  # the largest rank's caching-allocator segment tails (kvplan.weights.allocator)

    @property
    def measured_bytes(self) -> int:
        """What the engine's weight line reports and its device-level budget loses: ``per_gpu_bytes`` plus the
        allocator reserve where the engine measures the load at the device level (SGLang; vLLM on ROCm), else the
        tensors (:attr:`per_gpu_bytes`)."""
        return self.per_gpu_bytes + self.allocator_reserve_bytes

    @property
    def per_gpu_gib(self) -> float:
        return self.per_gpu_bytes / GIB


def flatten_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as the weight estimate reads it: :func:`kvplan.hfconfig.normalize.flatten_config` (SGLang's
    rule), plus ``_outer_architectures`` (the wrapper's ``architectures``) when a ``text_config`` is nested."""
    if not isinstance(config, Mapping):
        raise InputError("config must be a mapping (a parsed config.json)", field="config")
    flat = _normalize(config)
    if isinstance(config.get("text_config"), Mapping):
        flat["_outer_architectures"] = config.get("architectures")
    return flat


@dataclass(frozen=True)
class _Loading:
    """Which stored tensors the engine loads onto the GPU."""

    load_mtp: bool
    engram: EngramPlacement
    experts_on_host: bool
    mtp_below: int | None = None  # MTP tensors of layers >= this are not loaded (a NextN draft builds one layer)
    vision: bool = True  # the vision tower is built (vLLM --language-model-only / zero --limit-mm-per-prompt: not)

    def loads(self, t: Tensor) -> bool:
        if t.stage == Stage.CKPT_ONLY or (t.stage == Stage.MTP and not self.loads_mtp_layer(t.layer)):
            return False
        if t.comp == "vision" and not self.vision:
            return False
        return not ((t.comp == "engram" and not self.engram.on_gpu) or (t.expert and self.experts_on_host))

    def loads_mtp_layer(self, layer: int | None) -> bool:
        """An MTP layer the engine loads: all with ``load_mtp``, only those below ``mtp_below`` when it is set."""
        if not self.load_mtp:
            return False
        return self.mtp_below is None or layer is None or layer < self.mtp_below

    def on_host(self, t: Tensor) -> bool:
        """A tensor the engine keeps in pinned host memory instead (the engram tables off the GPU)."""
        return t.comp == "engram" and not self.engram.on_gpu

    def notes(self) -> tuple[str, ...]:
        out: tuple[str, ...] = ()
        if self.experts_on_host:
            out += ("routed experts on the host (CPU experts): not counted on the GPU",)
        if not self.vision:
            out += ("vision tower not built (load_vision=False: vLLM --language-model-only / --limit-mm-per-prompt 0)",)
        return out


@dataclass
class _Tally:
    """Bytes per component on one rank of each stage, and the whole-model sums."""

    per_stage: list[dict[str, int]]
    host: int = 0  # bytes in pinned host memory (engram host table: whole, or the largest rank's rows)
    total_loaded: int = 0  # every loaded tensor once (replicas counted once)
    ckpt_total: int = 0  # model bytes of everything the checkpoint stores
    params: int = 0
    notes: list[str] = field(default_factory=list)
    allocs: list[list[tuple[str, int]]] = field(default_factory=list)  # per stage: (path, bytes) in load order
    reserve: list[int] = field(default_factory=list)  # per stage: the allocator reserve (device-level engines)


def _tally(
    tensors: Sequence[Tensor],
    extra: Sequence[Tensor],
    *,
    quant: QuantPlan,
    shard: Sharding,
    pad: tuple[int, int] | None,
    ranges: Sequence[tuple[int, int]],
    loading: _Loading,
) -> _Tally:
    """Per-rank bytes of every loaded tensor on the stages that load it; whole-model sums.  ``tensors`` are stored
    in the checkpoint (their params and bytes count), ``extra`` only loaded (the PP lm_head of tied embeddings)."""
    tally = _Tally(per_stage=[{} for _ in ranges], allocs=[[] for _ in ranges])
    groups, ep = shard.groups, shard.ep
    for stored, group in ((True, tensors), (False, extra)):
        for t in group:
            storage = quant.storage(t)
            full_b = storage_bytes(storage, t.full_rows, t.cols) * t.copies
            if stored:
                tally.params += t.params
                tally.ckpt_total += full_b
            rows, cols, copies = rank_shape(t, groups, ep, pad)
            rank_b = storage_bytes(storage, rows, cols) * copies
            if loading.on_host(t):
                tally.host += full_b if loading.engram == EngramPlacement.HOST_SHARED else rank_b
            if not loading.loads(t):
                continue
            tally.total_loaded += full_b
            for s in stages_of(t, ranges):
                stage = tally.per_stage[s]
                stage[t.comp] = stage.get(t.comp, 0) + rank_b
                tally.allocs[s].append((t.path, rank_b))
    return tally


def _add_mla_absorbed(
    tally: _Tally, cfg: Mapping[str, Any], *, attn_tp: int, ranges: Sequence[tuple[int, int]], loading: _Loading
) -> None:
    """MLA keeps w_kc / w_vc, a bf16 copy of the rank's kv_b_proj: per layer
    ``ceil(heads / attn_tp) * kv_lora_rank * (qk_nope_head_dim + v_head_dim) * 2`` bytes (the MTP layer too when
    loaded), on top of kv_b_proj itself (deepseek_weight_loader.py post_load_weights)."""
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    lora, nope, v = need_int(cfg, "kv_lora_rank"), need_int(cfg, "qk_nope_head_dim"), need_int(cfg, "v_head_dim")
    width = lora * (nope + v) * 2
    per_layer = math.ceil(nh / attn_tp) * width
    last = len(ranges) - 1
    n_layers = need_int(cfg, "num_hidden_layers")
    mtp = sum(1 for j in range(opt_int(cfg, "num_nextn_predict_layers", 0)) if loading.loads_mtp_layer(n_layers + j))
    for s, (a, b) in enumerate(ranges):
        n = b - a + (mtp if s == last else 0)
        tally.per_stage[s]["mla_absorbed"] = tally.per_stage[s].get("mla_absorbed", 0) + n * per_layer
        heads = math.ceil(nh / attn_tp)
        for i in range(a, a + n):  # w_kc and w_vc of each layer, made after every weight is loaded
            tally.allocs[s] += [
                (f"model.layers.{i}.w_kc", heads * lora * nope * 2),
                (f"model.layers.{i}.w_vc", heads * lora * v * 2),
            ]
    tally.total_loaded += need_int(cfg, "num_hidden_layers") * nh * width
    tally.notes.append(
        "MLA: w_kc/w_vc absorbed copy of kv_b_proj kept in bf16 next to kv_b_proj "
        "(deepseek_weight_loader.py post_load_weights)"
    )


def _walk_notes(inv: Inventory, quant: QuantPlan, loading: _Loading, padded: bool, draft: DraftLoad) -> list[str]:
    """The MTP, draft, engram, vision and MXFP4-padding notes of what the walk found."""
    ts, notes = inv.tensors, []
    if draft.tensors:
        notes.append("the checkpoint's MTP slots (mtp.*) are loaded as the DSpark draft, counted as 'draft'")
    elif (opt_int(inv.cfg, "num_nextn_predict_layers", 0) or opt_int(inv.cfg, "mtp_num_hidden_layers", 0)) and any(
        t.stage == Stage.MTP for t in ts
    ):
        if loading.load_mtp:
            notes.append("MTP layer loaded (speculative decoding)")
        elif draft.algorithm:
            notes.append(f"MTP layer not loaded: the {draft.algorithm} draft does not use it")
        else:
            notes.append(
                "MTP layer not loaded: speculative decoding off skips layers >= num_hidden_layers "
                "(deepseek_weight_loader.py, NextNDisabledConfig)"
            )
    notes.extend(draft.notes)
    if any(t.comp == "engram" for t in ts):
        notes.append(placement_note(loading.engram))
    if any(t.comp == "engram_proj" for t in ts):
        notes.append(
            "engram projections (wkv, q/k weights) replicated on every GPU in every engram placement "
            "(layers/engram.py Engram.__init__)"
        )
    vision = [t for t in ts if t.comp == "vision" and loading.loads(t)]
    if any(t.path not in _GENERIC_VISION_PATHS for t in vision):
        notes.append(
            "vision tower built as the engine's model file builds it (kvplan.weights.vision): 16-bit, its "
            "attention/MLP split over TP where the engine shards them, on the stages that build it"
        )
    elif vision:
        notes.append("vision tower counted as a generic ViT, replicated, 16-bit, on the first stage")
    if any(t.comp == "vision" and t.stage == Stage.CKPT_ONLY for t in ts):
        notes.append(
            "vision tower stored but not built: SGLang builds Llama-4's only with --enable-multimodal "
            "(configs/model_config.py turns multimodal off for Llama4ForConditionalGeneration)"
        )
    if quant.expert is not None and quant.expert.name in _MXFP4_EXPERT_SCHEMES and not padded:
        notes.append(
            "MXFP4 MoE kernels may pad expert buffers (gpt-oss on Marlin: hidden 2880 -> 3072, "
            "720 -> 768 per rank); pass expert_padding to model it"
        )
    return notes


@dataclass(frozen=True)
class _Kernel:
    """The expert buffers' padding, its notes, and what vLLM's Triton path keeps besides (None: nothing)."""

    pad: tuple[int, int] | None
    notes: tuple[str, ...]
    triton: TritonExtras | None = None


def _kernel(
    expert_padding: Any,
    *,
    inv: Inventory,
    quant: QuantPlan,
    engine: str,
    engine_version: str | None,
    sm_major: int | None,
    vendor: str,
) -> _Kernel:
    """``expert_padding`` when given, else for gpt-oss MXFP4 experts under vLLM the backend vLLM picks on the GPU
    (:func:`kvplan.weights.kernels.vllm_mxfp4_backend`; other MXFP4 MoE models go through vLLM's DeepSeek-V4
    selector, not modelled), else no padding."""
    if sm_major is not None and not int_at_least(sm_major, 0):
        raise InputError(
            f"sm_major must be a compute-capability major number such as 9, not {sm_major!r}", field="sm_major"
        )
    mxfp4_backend = weight_rules(engine).mxfp4_moe_backend
    if expert_padding == "vllm-triton" and mxfp4_backend and inv.arch.gpt_oss:  # what the backend keeps too
        extras = vllm_triton_extras(engine_version=engine_version, sm_major=sm_major)
        return _Kernel(*expert_padding_multiples(expert_padding), extras)
    if expert_padding is not None:
        return _Kernel(*expert_padding_multiples(expert_padding))
    mxfp4 = quant.expert is not None and quant.expert.name in _MXFP4_EXPERT_SCHEMES and inv.arch.gpt_oss
    if not (mxfp4 and mxfp4_backend and (sm_major is not None or vendor != "nvidia")):
        return _Kernel(None, ())
    choice = vllm_mxfp4_backend(engine_version=engine_version, sm_major=sm_major, vendor=vendor)
    if choice.backend is None:
        return _Kernel(None, (choice.note,))
    pad, pad_notes = expert_padding_multiples(choice.backend)
    return _Kernel(pad, (choice.note, *pad_notes), choice.triton)


def _add_triton_extras(
    tally: _Tally, inv: Inventory, kernel: _Kernel, *, shard: Sharding, ranges: Sequence[tuple[int, int]]
) -> None:
    """Add :func:`~kvplan.weights.kernels.triton_expert_extra_bytes` of every MoE layer to its stage's experts."""
    extras = kernel.triton
    if extras is None or kernel.pad is None:
        return
    n = num_experts(inv.cfg)
    experts = math.ceil(n / shard.ep)
    inter = (
        -(-math.ceil(need_int(inv.cfg, "intermediate_size") / shard.groups[Group.MOE]) // kernel.pad[1]) * kernel.pad[1]
    )
    per_layer = triton_expert_extra_bytes(extras=extras, experts=experts, hidden=inv.arch.hidden, inter=inter)
    moe_layers = {t.layer for t in inv.tensors if t.expert and t.stage == Stage.LAYER and t.layer is not None}
    for s, (a, b) in enumerate(ranges):
        k = sum(1 for i in moe_layers if a <= i < b)
        tally.per_stage[s]["experts"] = tally.per_stage[s].get("experts", 0) + k * per_layer
    tally.total_loaded += len(moe_layers) * per_layer * shard.ep * shard.groups[Group.MOE]  # every expert shard


#: the buffers SGLang's WNA16 MoE method allocates after a layer's packed experts and scales, in its create order
#: (compressed_tensors_wNa16_moe.py ``CompressedTensorsWNA16MoE.create_weights``, v0.5.9): (name, int32 columns of
#: the hidden size, of the rank's intermediate size, model-dtype shape pairs)
_WNA16_INDEX_BUFFERS = (
    ("w2_weight_shape", 0, 0, 1),
    ("w13_weight_shape", 0, 0, 1),
    ("w13_weight_g_idx", 1, 0, 0),
    ("w2_weight_g_idx", 0, 1, 0),
    ("w13_g_idx_sort_indices", 1, 0, 0),
    ("w2_g_idx_sort_indices", 0, 1, 0),
)


def _add_wna16_index(
    tally: _Tally,
    inv: Inventory,
    quant: QuantPlan,
    *,
    shard: Sharding,
    pad: tuple[int, int] | None,
    ranges: Sequence[tuple[int, int]],
    loading: _Loading,
    engine: str,
    vendor: str,
) -> str | None:
    """Where the engine's WNA16 MoE method keeps its act-order buffers (:attr:`WeightRules.wna16_moe_index_on`, SGLang
    on ROCm) and the checkpoint is compressed-tensors WNA16 (:func:`kvplan.weights.quant.compressed_tensors_wna16`):
    add :func:`kvplan.weights.kernels.wna16_moe_index_bytes` of every loaded, quantized MoE layer to its stage's
    experts, as allocations right after the layer's experts; the note, or None when nothing is added."""
    on = weight_rules(engine).wna16_moe_index_on
    if vendor not in on or not compressed_tensors_wna16(inv.cfg.get("quantization_config")):
        return None
    dtype_bytes = storage_bytes(quant.base, 1, 1)
    added = 0
    for t in inv.tensors:
        if not (t.expert and t.quant and t.path.endswith(".down_proj") and loading.loads(t)):
            continue
        if not isinstance(quant.storage(t), Scheme):  # an ignored (16-bit) MoE layer takes the unquantized method
            continue
        hidden, inter, experts = rank_shape(t, shard.groups, shard.ep, pad)
        sizes = {"h": 4 * experts * hidden, "i": 4 * experts * inter, "p": 2 * experts * dtype_bytes}
        layer_b = wna16_moe_index_bytes(experts=experts, hidden=hidden, inter=inter, dtype_bytes=dtype_bytes)
        prefix = t.path.rsplit(".", 1)[0]
        entries = [
            (f"{prefix}.{name}", h * sizes["h"] + i * sizes["i"] + p * sizes["p"])
            for name, h, i, p in _WNA16_INDEX_BUFFERS
        ]
        for st in stages_of(t, ranges):
            stage = tally.per_stage[st]
            stage["experts"] = stage.get("experts", 0) + layer_b
            allocs = tally.allocs[st]
            at = next((k + 1 for k, (path, _) in enumerate(allocs) if path == t.path), len(allocs))
            allocs[at:at] = entries
        tally.total_loaded += layer_b * shard.ep * shard.groups[Group.MOE]
        added += layer_b
    if not added:
        return None
    return (
        "WNA16 MoE on ROCm: SGLang's Triton path keeps the int32 act-order buffers (g_idx and sort indices, "
        "experts x hidden and experts x intermediate per layer) it creates for Marlin "
        "(compressed_tensors_wNa16_moe.py CompressedTensorsWNA16TritonMoE, v0.5.9), counted with the experts"
    )


def _add_allocator_reserve(tally: _Tally, *, engine: str, vendor: str) -> str | None:
    """Where the engine's weight figure and its KV budget are device-level (:attr:`WeightRules.allocator_reserve_on`):
    record each stage's caching-allocator segment tails over its allocations
    (:func:`kvplan.weights.allocator.reserved_bytes` of :func:`~kvplan.weights.allocator.fused_allocations`), kept
    apart from the tensors (:attr:`WeightEstimate.allocator_reserve_bytes`); the note, or None when the engine
    measures the tensors themselves."""
    on = weight_rules(engine).allocator_reserve_on
    if "*" not in on and vendor not in on:
        return None
    from kvplan.weights.allocator import fused_allocations, reserved_bytes

    tally.reserve = []
    for entries in tally.allocs:
        sizes = fused_allocations(entries)
        tally.reserve.append(max(0, reserved_bytes(sizes=sizes) - sum(sizes)))
    return (
        "allocator reserve: the weight load is measured at the device level (free memory before and after), so the "
        "caching allocator's unused segment tails count: WeightEstimate.allocator_reserve_bytes "
        "(kvplan.weights.allocator)"
    )


def _engram_placement(placement: str | None, engram_on_host: bool) -> EngramPlacement:
    """``engram_placement`` (a :class:`~kvplan.weights.engram.EngramPlacement` value) or, without it, host-shared
    when ``engram_on_host`` else gpu; InputError for an unknown name or a contradiction."""
    if placement is None:
        return EngramPlacement.HOST_SHARED if engram_on_host else EngramPlacement.GPU
    try:
        where = EngramPlacement(placement)
    except ValueError:
        raise InputError(
            f"engram_placement must be one of {', '.join(p.value for p in EngramPlacement)}, not {placement!r}",
            field="engram_placement",
        ) from None
    if engram_on_host and where.on_gpu:
        raise InputError(f"engram_on_host contradicts engram_placement {where.value!r}", field="engram_placement")
    return where


def _architecture(cfg: Mapping[str, Any]) -> str | None:
    """The architecture SGLang dispatches on: the wrapper's ``architectures[0]`` when nested, else the config's."""
    archs = cfg.get("_outer_architectures") or cfg.get("architectures")
    return str(archs[0]) if isinstance(archs, list) and archs else None


def _result(tally: _Tally, notes: list[str], checkpoint_bytes: int | None) -> WeightEstimate:
    """The largest stage's bytes, as modelled or scaled to the checkpoint's size."""
    stage_tot = [sum(d.values()) for d in tally.per_stage]
    big = max(range(len(stage_tot)), key=lambda s: stage_tot[s])
    per_gpu_model = stage_tot[big]
    breakdown = tuple(sorted(tally.per_stage[big].items(), key=lambda kv: -kv[1]))
    if tally.host:
        notes.append(
            f"engram host table: {tally.host} B ({tally.host / GIB:.2f} GiB) of pinned host memory, not on the GPU"
        )
    reserve = tally.reserve[big] if tally.reserve else 0
    if checkpoint_bytes is None:
        return WeightEstimate(
            per_gpu_model, tally.total_loaded, tally.params, "params", breakdown, tuple(notes), tally.host, reserve
        )
    num, den = checkpoint_bytes, max(1, tally.ckpt_total)
    notes.append(
        f"checkpoint {checkpoint_bytes} B scaled by the modelled share of the largest rank "
        f"({per_gpu_model}/{tally.ckpt_total}); model/checkpoint ratio "
        f"{tally.ckpt_total / checkpoint_bytes:.4f}"
    )
    return WeightEstimate(
        per_gpu_model * num // den,
        tally.total_loaded * num // den,
        tally.params,
        "checkpoint",
        tuple((k, v * num // den) for k, v in breakdown),
        tuple(notes),
        tally.host,
        reserve,
    )


def _check_checkpoint_bytes(checkpoint_bytes: Any) -> None:
    if checkpoint_bytes is None:
        return
    if not is_int(checkpoint_bytes):
        raise InputError(
            f"checkpoint_bytes must be an integer (bytes), not {checkpoint_bytes!r}", field="checkpoint_bytes"
        )
    if checkpoint_bytes <= 0:
        raise InputError("checkpoint_bytes must be positive", field="checkpoint_bytes")


def estimate_weight_bytes(
    *,
    config: Mapping[str, Any],
    quantization: str,
    checkpoint_bytes: int | None = None,
    tp_size: int = 1,
    pp_size: int = 1,
    ep_size: int = 1,
    attn_dp_size: int = 1,
    engine: str = "sglang",
    engram_on_host: bool = False,
    load_mtp: bool = False,
    experts_on_host: bool = False,
    expert_padding: str | tuple[int, int] | None = None,
    enable_dp_lm_head: bool = False,
    hf_quant_config: Mapping[str, Any] | None = None,
    moe_dense_tp_size: int | None = None,
    engram_placement: str | None = None,
    engine_version: str | None = None,
    sm_major: int | None = None,
    gpu_vendor: str = "nvidia",
    speculative_algorithm: str | None = None,
    load_vision: bool = True,
) -> WeightEstimate:
    """Bytes of weights on the largest rank, as the engine shards them.

    Formula: per_gpu = max over PP stages of sum over tensors of
    ``scheme_bytes(scheme(t), rows_rank(t), cols_rank(t)) * ceil(copies/ep)``, where
    rows_rank/cols_rank follow the sharding rules of :mod:`kvplan.weights.sharding`
    (SGLang: each architecture's layout, e.g. DeepSeek attention over attn_tp = tp/attn_dp and Llama's over tp;
    kv heads max(1, kv/group); dense MLP over tp or replicated with ``moe_dense_tp_size=1``; shared experts over
    tp; experts n/ep each split by moe_tp = tp/ep; vocab padded to 64 and split; replicated parts whole).  MLA adds
    the w_kc/w_vc bf16 copy.  With ``checkpoint_bytes``: per_gpu = checkpoint_bytes * per_gpu_model /
    checkpoint_model.

    Worked example: Llama-3.1-8B bf16, TP1 = 2 * 8,030,261,248 = 16,060,522,496 B
    (14.96 GiB).  vLLM printed "Model loading took 14.99 GiB" (llmd-llama31-8b-h100).

    ``engine``: "sglang" or "vllm".  SGLang: ``attn_dp_size`` = the DP-attention size, ``enable_dp_lm_head`` and
    ``moe_dense_tp_size`` (None = the engine's default, the full TP group; 1 replicates dense MLP layers) as the
    flags.  vLLM: ``attn_dp_size`` = ``--data-parallel-size`` (attention and dense layers replicated per DP rank,
    MoE over tp x dp) and ``ep_size = tp*dp`` with ``--enable-expert-parallel`` (experts then not TP-sharded).
    ``load_mtp``: True loads every MTP layer the checkpoint stores (kept for callers that decide it themselves).
    ``speculative_algorithm``: the ``--speculative-algorithm`` (SGLang's names, NEXTN / MTP = EAGLE): its draft's
    weights are added as the engine loads them before it profiles the KV budget
    (:func:`kvplan.weights.draft.draft_load`): EAGLE/NEXTN the checkpoint's first MTP layer (vLLM MTP: all), DSPARK
    the DSpark stages of a DeepSeek-V4 checkpoint that bundles them (component ``draft``); a draft in another
    checkpoint is not counted (a note says so).
    ``experts_on_host``: routed experts run on the CPU (kt-kernel ``--kt-num-gpu-experts 0``),
    so no routed-expert bytes land on the GPU.
    ``engram_placement``: an :class:`~kvplan.weights.engram.EngramPlacement` value (gpu, gpu-peer, host-shared,
    host-per-rank; :func:`kvplan.weights.engram.engram_placement` reads it from the release and environment);
    ``engram_on_host=True`` without it = host-shared.  Host tables add ``host_bytes``, not GPU bytes.
    ``expert_padding``: a key of ``MXFP4_EXPERT_PADDING`` (the MoE backend) or
    (hidden_multiple, intermediate_multiple): expert buffers rounded up as the kernel needs.  Without it, vLLM
    MXFP4 experts take the padding of the backend vLLM ``engine_version`` picks on a GPU of compute capability
    ``sm_major`` / ``gpu_vendor`` (:func:`kvplan.weights.kernels.vllm_mxfp4_backend`); "none" turns it off.
    ``gpu_vendor`` also selects vendor-specific loading: SGLang on "amd" keeps the compressed-tensors WNA16 MoE's
    act-order buffers (:func:`kvplan.weights.kernels.wna16_moe_index_bytes`, component ``experts``).
    ``hf_quant_config``: the ModelOpt ``hf_quant_config.json`` (its exclude_modules apply).
    ``load_vision``: False when the engine skips the vision tower: vLLM ``--language-model-only`` or
    ``--limit-mm-per-prompt`` zero for every modality the tower serves (image and video; Kimi-K2.5's
    "vision_chunk") (v0.21.0 ``models/interfaces.py``
    ``_mark_tower_model`` builds no tower then); SGLang 0.5.15's ``--language-only`` still builds it (the loader
    only skips the weights), so keep True there.  The tower stays in the checkpoint-size ratio either way.

    Errors: InputError (exit 2) for a bad argument or a config field the estimate cannot read (named); any other
    exception is a kvplan bug and is not converted.
    """
    check_parallel(
        engine=engine, tp=tp_size, pp=pp_size, ep=ep_size, attn_dp=attn_dp_size, moe_dense_tp_size=moe_dense_tp_size
    )
    _check_checkpoint_bytes(checkpoint_bytes)
    inv = inventory(config, engine=engine, hf_quant_config=hf_quant_config)
    quant = plan_quantization(cfg=inv.cfg, quantization=quantization, hf_quant_config=hf_quant_config)
    shard = plan_sharding(
        engine=engine,
        family=inv.family,
        tp=tp_size,
        ep=ep_size,
        attn_dp=attn_dp_size,
        dp_lm_head=enable_dp_lm_head,
        has_experts=bool(num_experts(inv.cfg)),
        kv_heads=opt_int(inv.cfg, "num_key_value_heads", 0),
        architecture=_architecture(inv.cfg),
        moe_dense_tp_size=moe_dense_tp_size,
    )
    kernel = _kernel(
        expert_padding,
        inv=inv,
        quant=quant,
        engine=engine,
        engine_version=engine_version,
        sm_major=sm_major,
        vendor=gpu_vendor,
    )
    pad = kernel.pad
    draft = draft_load(inv, algorithm=speculative_algorithm, engine=engine)
    loading = _Loading(
        load_mtp=load_mtp or draft.mtp_layers != 0,
        engram=_engram_placement(engram_placement, engram_on_host),
        experts_on_host=experts_on_host,
        mtp_below=None if load_mtp or not draft.mtp_layers else inv.arch.num_layers + draft.mtp_layers,
        vision=load_vision,
    )
    ranges = pp_layer_ranges(inv.arch.num_layers, pp_size, engine=engine)
    extra_lm, lm_notes = pp_lm_head(inv.arch, pp_size)

    tally = _tally(
        inv.tensors, [*extra_lm, *draft.tensors], quant=quant, shard=shard, pad=pad, ranges=ranges, loading=loading
    )
    _add_triton_extras(tally, inv, kernel, shard=shard, ranges=ranges)
    wna16_note = _add_wna16_index(
        tally, inv, quant, shard=shard, pad=pad, ranges=ranges, loading=loading, engine=engine, vendor=gpu_vendor
    )
    if inv.family in _LATENT:
        _add_mla_absorbed(tally, inv.cfg, attn_tp=shard.attn_tp, ranges=ranges, loading=loading)
    _add_allocator_reserve(tally, engine=engine, vendor=gpu_vendor)  # kept apart: allocator_reserve_bytes
    notes = [
        *quant.notes,
        *shard.notes,
        *kernel.notes,
        *loading.notes(),
        *lm_notes,
        *tally.notes,
        *([wna16_note] if wna16_note else []),
        *_walk_notes(inv, quant, loading, padded=pad is not None, draft=draft),
    ]
    return _result(tally, notes, checkpoint_bytes)

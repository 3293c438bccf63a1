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
from kvplan.parallel import pp_layer_ranges
from kvplan.weights.blocks import num_experts
from kvplan.weights.fields import need_int, opt_int
from kvplan.weights.inventory import Inventory, count_params, inventory
from kvplan.weights.quant import Patterns, QuantPlan, ignored, plan_quantization, scheme_bytes, storage_bytes
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
from kvplan.weights.tensor import Stage, Tensor

__all__ = [
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

GIB = 2**30
_LATENT = (Family.MLA, Family.DSA)  # MLA attention: the absorbed w_kc / w_vc copy

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
    engram_on_host: bool
    experts_on_host: bool

    def loads(self, t: Tensor) -> bool:
        if t.stage == Stage.CKPT_ONLY or (t.stage == Stage.MTP and not self.load_mtp):
            return False
        if t.comp == "engram" and self.engram_on_host:
            return False
        return not (t.expert and self.experts_on_host)

    def notes(self) -> tuple[str, ...]:
        return ("routed experts on the host (CPU experts): not counted on the GPU",) if self.experts_on_host else ()


@dataclass
class _Tally:
    """Bytes per component on one rank of each stage, and the whole-model sums."""

    per_stage: list[dict[str, int]]
    total_loaded: int = 0  # every loaded tensor once (replicas counted once)
    ckpt_total: int = 0    # model bytes of everything the checkpoint stores
    params: int = 0
    notes: list[str] = field(default_factory=list)


def _tally(tensors: Sequence[Tensor], extra: Sequence[Tensor], *, quant: QuantPlan, shard: Sharding,
           pad: tuple[int, int] | None, ranges: Sequence[tuple[int, int]], loading: _Loading) -> _Tally:
    """Per-rank bytes of every loaded tensor on the stages that load it; whole-model sums.  ``tensors`` are stored
    in the checkpoint (their params and bytes count), ``extra`` only loaded (the PP lm_head of tied embeddings)."""
    tally = _Tally(per_stage=[{} for _ in ranges])
    groups, ep = shard.groups, shard.ep
    for stored, group in ((True, tensors), (False, extra)):
        for t in group:
            storage = quant.storage(t)
            full_b = storage_bytes(storage, t.full_rows, t.cols) * t.copies
            if stored:
                tally.params += t.params
                tally.ckpt_total += full_b
            if not loading.loads(t):
                continue
            rows, cols, copies = rank_shape(t, groups, ep, pad)
            rank_b = storage_bytes(storage, rows, cols) * copies
            tally.total_loaded += full_b
            for s in stages_of(t, ranges):
                stage = tally.per_stage[s]
                stage[t.comp] = stage.get(t.comp, 0) + rank_b
    return tally


def _add_mla_absorbed(tally: _Tally, cfg: Mapping[str, Any], *, attn_tp: int,
                      ranges: Sequence[tuple[int, int]], load_mtp: bool) -> None:
    """MLA keeps w_kc / w_vc, a bf16 copy of the rank's kv_b_proj: per layer
    ``ceil(heads / attn_tp) * kv_lora_rank * (qk_nope_head_dim + v_head_dim) * 2`` bytes (the MTP layer too when
    loaded), on top of kv_b_proj itself (deepseek_weight_loader.py post_load_weights)."""
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    width = need_int(cfg, "kv_lora_rank") * (need_int(cfg, "qk_nope_head_dim") + need_int(cfg, "v_head_dim")) * 2
    per_layer = math.ceil(nh / attn_tp) * width
    last = len(ranges) - 1
    mtp = opt_int(cfg, "num_nextn_predict_layers", 0) if load_mtp else 0
    for s, (a, b) in enumerate(ranges):
        n = b - a + (mtp if s == last else 0)
        tally.per_stage[s]["mla_absorbed"] = tally.per_stage[s].get("mla_absorbed", 0) + n * per_layer
    tally.total_loaded += need_int(cfg, "num_hidden_layers") * nh * width
    tally.notes.append("MLA: w_kc/w_vc absorbed copy of kv_b_proj kept in bf16 next to kv_b_proj "
                       "(deepseek_weight_loader.py post_load_weights)")


def _walk_notes(inv: Inventory, quant: QuantPlan, loading: _Loading, padded: bool) -> list[str]:
    """The MTP, engram, vision and MXFP4-padding notes of what the walk found."""
    ts, notes = inv.tensors, []
    if opt_int(inv.cfg, "num_nextn_predict_layers", 0) and any(t.stage == Stage.MTP for t in ts):
        notes.append("MTP layer " + ("loaded (speculative decoding)" if loading.load_mtp else
                                     "not loaded: speculative decoding off skips layers >= num_hidden_layers "
                                     "(deepseek_weight_loader.py, NextNDisabledConfig)"))
    if any(t.comp == "engram" for t in ts):
        notes.append("engram tables " + ("in host memory (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1)"
                                         if loading.engram_on_host
                                         else "on GPU, rows split over TP (layers/engram.py EngramEmbedding)"))
    if any(t.comp == "vision" for t in ts):
        notes.append("vision tower counted as a generic ViT, replicated, 16-bit, on the first stage")
    if quant.expert is not None and quant.expert.name == "mxfp4" and not padded:
        notes.append("MXFP4 MoE kernels may pad expert buffers (gpt-oss on Marlin: hidden 2880 -> 3072, "
                     "720 -> 768 per rank); pass expert_padding to model it")
    return notes


def _result(tally: _Tally, notes: list[str], checkpoint_bytes: int | None) -> WeightEstimate:
    """The largest stage's bytes, as modelled or scaled to the checkpoint's size."""
    stage_tot = [sum(d.values()) for d in tally.per_stage]
    big = max(range(len(stage_tot)), key=lambda s: stage_tot[s])
    per_gpu_model = stage_tot[big]
    breakdown = tuple(sorted(tally.per_stage[big].items(), key=lambda kv: -kv[1]))
    if checkpoint_bytes is None:
        return WeightEstimate(per_gpu_model, tally.total_loaded, tally.params, "params", breakdown, tuple(notes))
    num, den = checkpoint_bytes, max(1, tally.ckpt_total)
    notes.append(f"checkpoint {checkpoint_bytes} B scaled by the modelled share of the largest rank "
                 f"({per_gpu_model}/{tally.ckpt_total}); model/checkpoint ratio "
                 f"{tally.ckpt_total / checkpoint_bytes:.4f}")
    return WeightEstimate(per_gpu_model * num // den, tally.total_loaded * num // den, tally.params, "checkpoint",
                          tuple((k, v * num // den) for k, v in breakdown), tuple(notes))


def _check_checkpoint_bytes(checkpoint_bytes: Any) -> None:
    if checkpoint_bytes is None:
        return
    if isinstance(checkpoint_bytes, bool) or not isinstance(checkpoint_bytes, int):
        raise InputError(f"checkpoint_bytes must be an integer (bytes), not {checkpoint_bytes!r}",
                         field="checkpoint_bytes")
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
) -> WeightEstimate:
    """Bytes of weights on the largest rank, as the engine shards them.

    Formula: per_gpu = max over PP stages of sum over tensors of
    ``scheme_bytes(scheme(t), rows_rank(t), cols_rank(t)) * ceil(copies/ep)``, where
    rows_rank/cols_rank follow the sharding rules of :mod:`kvplan.weights.sharding`
    (attention over attn_tp = tp/attn_dp; kv heads max(1, kv/attn_tp); dense MLP and
    shared experts over tp; experts n/ep each split by moe_tp = tp/ep; vocab padded
    to 64 and split over tp; replicated parts whole).  MLA adds the w_kc/w_vc bf16 copy.
    With ``checkpoint_bytes``: per_gpu = checkpoint_bytes * per_gpu_model / checkpoint_model.

    Worked example: Llama-3.1-8B bf16, TP1 = 2 * 8,030,261,248 = 16,060,522,496 B
    (14.96 GiB).  vLLM printed "Model loading took 14.99 GiB" (llmd-llama31-8b-h100).

    ``engine``: "sglang" or "vllm".  For vLLM pass ``ep_size = tp*dp`` when
    ``--enable-expert-parallel`` is on (experts are then not TP-sharded) and keep
    ``attn_dp_size=1`` (vLLM data parallelism replicates the whole model per tp group).
    ``load_mtp``: True when speculative decoding (NextN/MTP) loads the MTP layer.
    ``experts_on_host``: routed experts run on the CPU (kt-kernel ``--kt-num-gpu-experts 0``),
    so no routed-expert bytes land on the GPU.
    ``expert_padding``: a key of ``MXFP4_EXPERT_PADDING`` (the MoE backend) or
    (hidden_multiple, intermediate_multiple): expert buffers rounded up as the kernel needs.
    ``hf_quant_config``: the ModelOpt ``hf_quant_config.json`` (its exclude_modules apply).

    Errors: InputError (exit 2) for a bad argument or a config field the estimate cannot read (named); any other
    exception is a kvplan bug and is not converted.
    """
    check_parallel(engine=engine, tp=tp_size, pp=pp_size, ep=ep_size, attn_dp=attn_dp_size)
    _check_checkpoint_bytes(checkpoint_bytes)
    inv = inventory(config, engine=engine, hf_quant_config=hf_quant_config)
    quant = plan_quantization(cfg=inv.cfg, quantization=quantization, hf_quant_config=hf_quant_config)
    shard = plan_sharding(engine=engine, family=inv.family, tp=tp_size, ep=ep_size, attn_dp=attn_dp_size,
                          dp_lm_head=enable_dp_lm_head, has_experts=bool(num_experts(inv.cfg)),
                          kv_heads=opt_int(inv.cfg, "num_key_value_heads", 0))
    pad, pad_notes = expert_padding_multiples(expert_padding)
    loading = _Loading(load_mtp=load_mtp, engram_on_host=engram_on_host, experts_on_host=experts_on_host)
    ranges = pp_layer_ranges(inv.arch.num_layers, pp_size, engine=engine)
    extra_lm, lm_notes = pp_lm_head(inv.arch, pp_size)

    tally = _tally(inv.tensors, extra_lm, quant=quant, shard=shard, pad=pad, ranges=ranges, loading=loading)
    if inv.family in _LATENT:
        _add_mla_absorbed(tally, inv.cfg, attn_tp=shard.attn_tp, ranges=ranges, load_mtp=load_mtp)
    notes = [*quant.notes, *shard.notes, *pad_notes, *loading.notes(), *lm_notes, *tally.notes,
             *_walk_notes(inv, quant, loading, padded=pad is not None)]
    return _result(tally, notes, checkpoint_bytes)

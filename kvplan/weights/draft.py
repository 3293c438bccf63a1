"""The speculative draft's own weights, as SGLang 0.5.23 loads them before it profiles the KV budget.

The scheduler builds the draft worker, and with it the draft model, between loading the target and sizing the KV
pools (``managers/scheduler.py init_model_worker``: ``init_tp_model_worker``, ``maybe_init_draft_worker``, then
``init_memory_pools``), and ``KVCacheConfigurator._profile_available_bytes`` measures the free memory with the
draft resident ("If using speculative decoding, draft weights are now counted").  So the draft's weights lower the
KV budget byte for byte.  What each algorithm loads (:data:`DRAFT_RULES`):

=================  ==============================================================================================
algorithm          draft weights on each GPU
=================  ==============================================================================================
EAGLE (NEXTN, MTP) a model with MTP (NextN) layers in its checkpoint: the first of them, one decoder layer
                   (``models/deepseek_nextn.py``, ``deepseek_v4_nextn.py``, ``glm4_moe_nextn.py``: one
                   ``self.decoder``; ``configs/model_config.py`` sets ``num_nextn_predict_layers = 1`` for a
                   DeepSeek-V4 NextN draft), sharing the target's embedding and lm_head; vLLM's ``mtp`` method
                   builds every ``num_nextn_predict_layers`` layer.  Without MTP layers the draft is another
                   checkpoint (``--speculative-draft-model-path``), which kvplan does not read.
DSPARK             a DeepSeek-V4 checkpoint that bundles the draft (any ``dspark_*`` key): the DSpark stages
                   (:func:`dspark_draft_tensors`); otherwise the ``dspark/`` subfolder or a separate checkpoint,
                   not read.
EAGLE3, STANDALONE, another checkpoint (``--speculative-draft-model-path``): not read, not counted (a note says so).
DFLASH,
FROZEN_KV_MTP
NGRAM, UNO         no draft model (NGRAM drafts from a token trie; UNO is the target with a LoRA adapter).
=================  ==============================================================================================

Sources (sgl-project/sglang, ``python/sglang/srt``, v0.5.23): ``models/deepseek_v4_dspark.py``
(``DeepseekV4ForCausalLMDSpark.__init__``, ``DSparkV4StageMixin.__init__``, ``DSparkAttention.__init__``,
``DSparkV4MarkovHead.__init__``, ``build_dspark_v4_confidence_head``, ``_dspark_stage_config``,
``_remap_dspark_weight_name``), ``speculative/dspark_components/dspark_config.py`` (``parse_dspark_draft_config``,
``checkpoint_bundles_dspark_draft``), ``speculative/dflash_utils.py parse_dflash_draft_config``
(``num_target_layers``), ``environ.py`` (``SGLANG_DSPARK_OPT_MARKOV_W2_BF16`` default true,
``SGLANG_RAGGED_VERIFY_MODE`` default "static").  No engine code is copied; the rules are restated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.readers import is_int_list
from kvplan.weights.blocks import Arch, num_experts
from kvplan.weights.fields import opt_int
from kvplan.weights.inventory import LAYER_BUILDERS, Inventory, dsv4_hc_mult
from kvplan.weights.rules import weight_rules
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed, lin, vec

__all__ = ["DRAFT_RULES", "DSPARK_BUNDLE_KEYS", "DraftLoad", "draft_load", "dspark_draft_tensors"]

#: ``dspark_config.checkpoint_bundles_dspark_draft``: any of these keys on the target config bundles the draft
DSPARK_BUNDLE_KEYS = ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id", "dspark_target_layer_ids")
#: spellings SGLang resolves to another algorithm (``spec_registry._RESERVED_ALIASES``), and vLLM's MTP
_ALIASES = MappingProxyType({"NEXTN": "EAGLE", "MTP": "EAGLE"})
_EXTERNAL = (
    "the draft is another checkpoint (--speculative-draft-model-path), which kvplan does not read: its "
    "weights are not counted (pass --weight-memory with the measured target + draft load)"
)


@dataclass(frozen=True)
class DraftLoad:
    """What a speculative algorithm's draft adds to the GPU: MTP layers of the checkpoint, extra tensors, notes."""

    algorithm: str = ""  # SGLang's name after the alias ("" = speculation off)
    mtp_layers: int | None = 0  # MTP (NextN) layers the draft loads: 0 none, None every one
    tensors: tuple[Tensor, ...] = ()  # the draft's own tensors (Stage.DRAFT): the DSpark stages
    notes: tuple[str, ...] = ()


def _markov_rank(cfg: Mapping[str, Any]) -> int:
    """``dspark_markov_rank``, else ``dspark_config`` / ``dflash_config`` ``markov_rank``, else ``markov_rank``
    (``parse_dspark_draft_config``); 0 when none is set."""
    v = opt_int(cfg, "dspark_markov_rank", 0)
    for nested in ("dspark_config", "dflash_config"):
        sub = cfg.get(nested)
        if not v and isinstance(sub, Mapping):
            v = opt_int(sub, "markov_rank", 0)
    return v or opt_int(cfg, "markov_rank", 0)


def _target_layer_ids(cfg: Mapping[str, Any]) -> tuple[int, ...] | None:
    """``dspark_target_layer_ids`` (a non-empty list of layer ids), else ``dflash_config.target_layer_ids``."""
    raw = cfg.get("dspark_target_layer_ids")
    if raw is None and isinstance(cfg.get("dflash_config"), Mapping):
        raw = cfg["dflash_config"].get("target_layer_ids")
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or not raw or not is_int_list(raw, minimum=0):
        raise InputError(
            f"dspark_target_layer_ids must be a non-empty list of layer ids, got {raw!r}",
            field="dspark_target_layer_ids",
        )
    return tuple(raw)


def _pre_from_prev(a: Arch) -> bool:
    """``hc_pre_from_prev_sublayer``: true for DeepSeek-V4.1 (``configs/deepseek_v41.py``), false for V4
    (``configs/deepseek_v4.py`` default) unless the config sets it."""
    v = a.cfg.get("hc_pre_from_prev_sublayer")
    if v is not None:
        return bool(v)
    archs = a.cfg.get("_outer_architectures") or a.cfg.get("architectures") or ()
    return a.model_type.startswith("deepseek_v41") or "DeepseekV41ForCausalLM" in archs


def dspark_draft_tensors(a: Arch) -> tuple[list[Tensor], list[str]]:
    """The DSpark draft of a DeepSeek-V4 checkpoint as ``DeepseekV4ForCausalLMDSpark`` builds it (its ``mtp.*``
    tensors; embedding and lm_head are the target's on CUDA), and the notes on what it assumed.

    Per stage s (``S = len(dspark_target_layer_ids)``, else ``num_nextn_predict_layers``, at least 1): one
    DeepSeek-V4 decoder layer of SWA-only attention (``DSparkAttention``, compress_ratio 0: wq_a, wkv, wq_b, wo_a,
    wo_b, the norms, the fp32 sink; ``wo_a_fp8=False``, ``wo_a_keeps_quant_config=False``: wo_a in bf16), two norms,
    the fp32 hyper-connection mixing, and a MoE of ``dspark_n_routed_experts`` (else the target's count) routed
    experts plus the shared expert, sharded like the target's layers (``DraftTPExecution.TARGET_LAYOUT``).  Stage
    0 adds ``main_proj`` ``[h, h * F]`` (ReplicatedLinear, the dense scheme; ``F = len(dspark_target_layer_ids)``,
    else ``num_target_layers``, else ``num_hidden_layers``) and ``main_norm``; the last stage adds ``norm`` and,
    on V4 (not V4.1, whose head collapses into the last FFN's pre-mix), ``hc_head`` fp32 ``hc*hc*h + hc + 1``.
    The Markov head: ``markov_w1`` ``[vocab, r]`` (VocabParallelEmbedding, ``enable_tp=False``: whole on every
    GPU, model dtype) and ``markov_w2`` ``[vocab, r]`` (nn.Linear, bf16 with ``SGLANG_DSPARK_OPT_MARKOV_W2_BF16``,
    the default; the TP-shard option slices only the matmul), ``r = dspark_markov_rank``.  No confidence head
    under the default ``SGLANG_RAGGED_VERIFY_MODE=static``.

    Worked example (DeepSeek-V4.1-Flash with the released DSpark keys: 3 stages, targets [37, 38, 39], 128 experts,
    rank 256; h 5120, vocab 129,280): Markov head 2 x 129,280 x 256 x 2 B = 132,382,720 B and main_proj
    5,120 x 15,360 fp8 + a fp32 scale per 32x32 block = 78,643,200 + 307,200 B on every GPU; per stage 128 experts
    x 3 x 2,304 x 5,120 fp4 (4.25 bits) / EP.
    """
    cfg, h = a.cfg, a.hidden
    targets = _target_layer_ids(cfg)
    stages = len(targets) if targets else max(1, opt_int(cfg, "num_nextn_predict_layers", 0))
    raw_dflash = cfg.get("dflash_config")
    flat_dflash: Mapping[str, Any] = raw_dflash if isinstance(raw_dflash, Mapping) else {}
    features = (
        len(targets)
        if targets
        else (opt_int(flat_dflash, "num_target_layers", 0) or opt_int(cfg, "num_target_layers", 0) or a.num_layers)
    )
    n_routed = opt_int(cfg, "dspark_n_routed_experts", 0) or num_experts(cfg)
    stage_arch = replace(a, cfg={**cfg, "n_routed_experts": n_routed, "compress_ratios": []})
    build = LAYER_BUILDERS[Family.DSV4]
    out: list[Tensor] = []
    for s in range(stages):
        i, pfx = a.num_layers + s, f"mtp.{s}"
        out += [replace(t, dtype="bf16") if t.path.endswith(".wo_a") else t for t in build(stage_arch, i, pfx)]
        if s == 0:
            out += [
                lin("draft", f"{pfx}.main_proj", h, h * features, Split.NONE, Group.NONE, i),
                vec("draft", f"{pfx}.main_norm", h, i),
            ]
        if s == stages - 1:
            out.append(vec("draft", f"{pfx}.norm", h, i))
            hc = dsv4_hc_mult(cfg)
            if hc and not _pre_from_prev(a):
                out.append(fixed("draft", f"{pfx}.hc_head", hc * hc * h + hc + 1, 1, i, dtype="fp32"))
    notes = [
        f"DSpark draft: {stages} stage(s) of SWA-only DeepSeek-V4 decoder layers with {n_routed} routed "
        f"experts"
        + (
            ""
            if cfg.get("dspark_n_routed_experts")
            else " (no dspark_n_routed_experts: the target's count, _dspark_stage_config)"
        )
        + f", main_proj over {features} target layer(s)"
        + ("" if targets else " (no dspark_target_layer_ids: num_target_layers / num_hidden_layers)")
        + ", wo_a in bf16; embedding and lm_head shared with the target (deepseek_v4_dspark.py)"
    ]
    rank = _markov_rank(cfg)
    last = a.num_layers + stages - 1
    if rank:
        out += [
            fixed("draft", "mtp.markov_head.markov_w1", a.vocab, rank, last, split=Split.VOCAB, dtype="bf16"),
            fixed("draft", "mtp.markov_head.markov_w2", a.vocab, rank, last, dtype="bf16"),
        ]
        notes.append(
            f"DSpark Markov head: markov_w1 and markov_w2 [{a.vocab}, {rank}] bf16, whole on every GPU "
            f"(SGLANG_DSPARK_OPT_MARKOV_W2_BF16 default; no confidence head under "
            f"SGLANG_RAGGED_VERIFY_MODE=static)"
        )
    else:
        notes.append(
            "DSpark Markov head not counted: the config has no dspark_markov_rank, and SGLang refuses a "
            "DSpark V4 draft without markov_rank > 0 (DeepseekV4ForCausalLMDSpark.__init__)"
        )
    return [replace(t, comp="draft", stage=Stage.DRAFT) for t in out], notes


def _eagle(inv: Inventory, engine: str) -> DraftLoad:
    if not any(t.stage == Stage.MTP for t in inv.tensors):
        return DraftLoad(notes=(f"speculative EAGLE: {_EXTERNAL}",))
    if weight_rules(engine).mtp_draft_layers is None:
        return DraftLoad(
            mtp_layers=None,
            notes=(
                "speculative MTP: the draft loads every MTP layer of the "
                "checkpoint, sharing the target's embedding and lm_head",
            ),
        )
    return DraftLoad(
        mtp_layers=weight_rules(engine).mtp_draft_layers,
        notes=(
            "speculative EAGLE/NEXTN: the draft loads the checkpoint's first MTP "
            "(NextN) layer, one decoder layer sharing the target's embedding and "
            "lm_head (deepseek_nextn.py / deepseek_v4_nextn.py), before the KV "
            "budget is profiled",
        ),
    )


def _dspark(inv: Inventory, engine: str) -> DraftLoad:
    del engine
    bundled = any(inv.cfg.get(k) is not None for k in DSPARK_BUNDLE_KEYS)
    if inv.family != Family.DSV4 or not bundled:
        return DraftLoad(
            notes=(f"speculative DSPARK: no DSpark draft bundled in this config (no dspark_* key): {_EXTERNAL}",)
        )
    tensors, notes = dspark_draft_tensors(inv.arch)
    return DraftLoad(
        tensors=tuple(tensors),
        notes=(*notes, "DSpark draft loaded before the KV budget is profiled (scheduler.py init_model_worker)"),
    )


def _external(inv: Inventory, engine: str) -> DraftLoad:
    del inv, engine
    return DraftLoad(notes=(f"speculative draft: {_EXTERNAL}",))


def _none(inv: Inventory, engine: str) -> DraftLoad:
    del inv, engine
    return DraftLoad(
        notes=(
            "speculative decoding without a draft model (NGRAM: a token trie; UNO: the target "
            "with a LoRA adapter, not counted): no draft weights",
        )
    )


#: algorithm (SGLang's name after the alias) -> how its draft's weights are found
DRAFT_RULES = MappingProxyType(
    {
        "EAGLE": _eagle,
        "DSPARK": _dspark,
        "EAGLE3": _external,
        "STANDALONE": _external,
        "DFLASH": _external,
        "FROZEN_KV_MTP": _external,
        "NGRAM": _none,
        "UNO": _none,
    }
)


def draft_load(inv: Inventory, *, algorithm: str | None, engine: str = "sglang") -> DraftLoad:
    """The draft weights ``--speculative-algorithm algorithm`` adds (see the module docstring); ``DraftLoad()`` when
    speculation is off.  InputError for a name no engine knows.

    Example: DeepSeek-V3 + NEXTN -> the MTP layer (``mtp_layers=1``); DeepSeek-V4.1-Flash + DSPARK -> the 3 DSpark
    stages and the Markov head as ``tensors``; Llama + EAGLE3 -> nothing, with a note.
    """
    name = (algorithm or "").strip().upper()
    if not name:
        return DraftLoad()
    rule = DRAFT_RULES.get(_ALIASES.get(name, name))
    if rule is None:
        raise InputError(
            f"unknown speculative algorithm {algorithm!r}",
            field="--speculative-algorithm",
            hint="use one of " + ", ".join(sorted({*DRAFT_RULES, *_ALIASES})),
        )
    return replace(rule(inv, engine), algorithm=_ALIASES.get(name, name))

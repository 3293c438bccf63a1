"""Which hybrid-SWA layers a config has, and which SGLang release a plan reads (the pools' inputs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.engines.sglang.pools.base import (
    PoolContext,
)
from kvplan.engines.sglang.releases import POOL_RULES_0523, PoolRules
from kvplan.errors import InputError
from kvplan.geometry import swa as geometry
from kvplan.geometry.swa import SWALayers
from kvplan.hfconfig.normalize import flatten_config
from kvplan.version import Version

#: ``--swa-full-tokens-ratio`` fallback (arg_groups/fields/schedule.py, ``fallback=0.8``); a plan reads the
#: release's default, ``RuleSet.pool_rules.swa_full_tokens_ratio`` (0.8 in every release with the flag).
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8


def always_disabled_archs(pool_rules: PoolRules | None = None) -> frozenset[str]:
    """Architectures whose model override always turns hybrid SWA memory off in a release (``pool_rules.
    swa_disabled_archs`` with the condition "always"; None: 0.5.23's -- Gemma-2/3, Gemma-3n, Olmo-2).

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py, olmo2.py, v0.5.23;
    server_args.py ``_handle_model_specific_adjustments``, v0.5.0rc2 - v0.5.9.
    """
    rules = POOL_RULES_0523 if pool_rules is None else pool_rules
    return frozenset(a for a, cond in rules.swa_disabled_archs.items() if cond == "always")


#: Gemma-4 in SGLang: first release with a Gemma-4 model (and in ``is_hybrid_swa_model``), and the first release
#: whose full-layer KV heads come from transformers' ``per_layer_config`` (``num_global_key_value_heads`` only with
#: ``attention_k_eq_v``; 0.5.11 - 0.5.21 set them from the config whenever given).  Read in the wheels:
#: ``models/gemma4_*`` absent in 0.5.9 / 0.5.10; ``utils/hf_transformers/config.py`` inline swap in 0.5.11 - 0.5.21,
#: ``_apply_gemma4_attention_overrides`` over ``per_layer_config`` in 0.5.22 / 0.5.23.
GEMMA4_SINCE = "0.5.11"
GEMMA4_K_EQ_V_GATE_SINCE = "0.5.22"


def swa_layers_from_config(
    cfg: Mapping[str, Any], *, release: str | None = None, pool_rules: PoolRules | None = None
) -> SWALayers:
    """The full/SWA split SGLang sizes: :func:`kvplan.geometry.swa.swa_layers_from_config`, after SGLang's model
    overrides (an architecture whose override always turns hybrid SWA memory off -- Gemma-2/3 -- is sized as a plain
    GQA pool: refused here; ``pool_rules`` = the release's, None = 0.5.23's) and the release's Gemma-4 rules
    (``release`` = the SGLang release, None = 0.5.23): no Gemma-4 model before :data:`GEMMA4_SINCE` (InputError on
    ``--engine-version``); the global KV heads ungated before :data:`GEMMA4_K_EQ_V_GATE_SINCE`.

    Example: gpt-oss-120b -> 18 full + 18 SWA layers, window 127; Gemma3ForCausalLM -> InputError;
    Gemma-4 26B-A4B at release 0.5.10 -> InputError.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py
    (``disable_hybrid_swa_memory``), configs/model_config.py ``is_hybrid_swa_model``,
    utils/hf_transformers/config.py, v0.5.11 - v0.5.23.
    """
    if isinstance(cfg, Mapping):
        archs = _architectures(cfg)
        if set(archs) & always_disabled_archs(pool_rules):
            raise InputError(
                f"{archs[0]}: SGLang {release or '0.5.23'} disables hybrid SWA memory for it "
                "(model override sets disable_hybrid_swa_memory)",
                field="--model",
                hint="size it as a plain GQA pool over all layers",
            )
    return sglang_swa_geometry(cfg, release=release)


def _architectures(cfg: Mapping[str, Any]) -> list[str]:
    return [str(a) for a in (flatten_config(cfg, engine="sglang").get("architectures") or [])]


def sglang_swa_geometry(cfg: Mapping[str, Any], *, release: str | None = None) -> SWALayers:
    """The layer split and head geometry of a sliding-window model as SGLang reads it, with the release's Gemma-4
    rules (see :func:`swa_layers_from_config`) and no model-override refusal (a release that turns the SWA pool off
    still sizes these layers, in one pool)."""
    gated = True
    if isinstance(cfg, Mapping) and release is not None:
        archs = _architectures(cfg)
        if set(archs) & geometry.GEMMA4_ARCHS:
            if Version.of(release) < Version.of(GEMMA4_SINCE):
                raise InputError(
                    f"SGLang {release} has no {archs[0]} model (Gemma-4 arrived in {GEMMA4_SINCE})",
                    field="--engine-version",
                    hint=f"use --engine-version {GEMMA4_SINCE} or newer",
                )
            gated = Version.of(release) >= Version.of(GEMMA4_K_EQ_V_GATE_SINCE)
    return geometry.swa_layers_from_config(cfg, engine="sglang", global_kv_needs_k_eq_v=gated)


def _release(ctx: PoolContext) -> str:
    """The SGLang release being planned: ``ctx.release`` when the prologue gives it, else the first release of the
    rule set's window (0.5.10 - 0.5.11 share one window: 0.5.11 then reads as 0.5.10)."""
    given = ctx.release
    return str(given) if given else ctx.rules.release


def _ratio(ctx: PoolContext) -> float:
    """``--swa-full-tokens-ratio``, else the release's default (``pool_rules.swa_full_tokens_ratio``)."""
    given = ctx.flags.swa_full_tokens_ratio
    return float(ctx.rules.pool_rules.swa_full_tokens_ratio if given is None else given)

"""SGLang speculative decoding as 0.5.23 resolves it: the algorithm, its draft tokens, steps and top-k, the request-cap
default, what it refuses, and which draft KV the pools price.

``resolve_speculative`` turns ``--speculative-algorithm`` (+ ``--speculative-num-draft-tokens`` and DSpark's
``--speculative-dspark-block-size``) into a :class:`SpecPlan` the way the engine's server-args pipeline does, in its
order (``arg_groups/pipeline.py``: ``handle_gpu_memory_settings`` -> ``handle_model_specific_adjustments`` (the
DeepSeek-V4 defaults and checks) -> ``handle_speculative_decoding`` (upper-case, the NEXTN alias, the algorithm's
handler)).  Each algorithm is one row of :data:`ALGORITHMS` (its handler, what draft KV the pool configurator prices,
the request cap its handler sets when ``--max-running-requests`` is unset, the first release that has it); a family
whose model hook restricts speculation has one row in :data:`FAMILY_RULES`.

What the pools price (``model_executor/pool_configurator.py``):

=============  ==============================================================================================
draft_kv       pool effect
=============  ==============================================================================================
``eagle``      EAGLE / EAGLE3 / FROZEN_KV_MTP (``is_eagle``) and STANDALONE: ``cell += int(cell * D / L)``
               (``DefaultPoolConfigurator``); the DeepSeek-V4 pool multiplies both of its coefficients by
               ``(L + 1) / L`` (``DSV4PoolConfigurator``, any algorithm)
``dflash``     DFLASH / DSPARK (``is_dflash_family``): ``cell + draft_cell`` from the draft checkpoint's config
               (``scale_kv_cell_size_per_token_for_dflash``); DeepSeek-V4: ``(L + 1) / L`` as above
``none``       NGRAM (``has_draft_kv`` False) and UNO (reuses the target): no draft KV; only the decode
               allocation per request grows with the draft tokens
=============  ==============================================================================================

The draft's *weights* (loaded before the KV budget is profiled) are the weight estimate's:
:mod:`kvplan.weights.draft` (``estimate_weight_bytes(..., speculative_algorithm=SpecPlan.algorithm)``).

Worked example (DeepSeek-V4.1-Flash, ``--speculative-algorithm DSPARK --speculative-dspark-block-size 6``): gamma 6
-> ``speculative_num_draft_tokens`` = 6 + 1 = 7, steps 1, top-k 1; the request cap stays DeepSeek-V4's 256 (its
hook runs first, DSpark's 48 never applies); a 3-stage draft (the config's 3 MTP slots) bundled in the checkpoint.

Sources (sgl-project/sglang, package paths under ``python/``; 0.5.23 wheel, first releases from the wheels
0.3.0 - 0.5.22 ``sglang/srt/speculative/spec_info.py``):

* ``sglang/srt/speculative/spec_info.py`` ``SpeculativeAlgorithm`` (DFLASH, UNO, DSPARK, EAGLE, EAGLE3,
  FROZEN_KV_MTP, STANDALONE, NGRAM; ``from_string``: NEXTN -> EAGLE), ``is_eagle``, ``is_dflash_family``,
  ``has_draft_kv``, ``handle_server_args``; ``speculative/spec_registry.py`` ``_RESERVED_ALIASES``.
* ``sglang/srt/arg_groups/speculative_hook.py`` ``handle_speculative_decoding``, ``_handle_dspark``,
  ``_handle_dflash``, ``_handle_uno``, ``_handle_frozen_kv_mtp``, ``_handle_eagle_family``,
  ``_auto_choose_speculative_params``, ``_handle_ngram``.
* ``sglang/srt/speculative/dspark_components/dspark_config.py`` ``DEFAULT_DSPARK_GAMMA = 7``,
  ``checkpoint_bundles_dspark_draft``, ``parse_dspark_draft_config``.
* ``sglang/srt/arg_groups/deepseek_v4_hook.py`` ``apply_deepseek_v4_defaults`` (256 running requests; only EAGLE
  and DSPARK, checked before the NEXTN alias is resolved), ``validate_deepseek_v41_features`` (V4.1: DSpark only, no
  pipeline parallelism).
* ``sglang/srt/mem_cache/allocation_sizing.py`` ``get_alloc_len_per_decode``,
  ``get_req_to_token_extra_context_len``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from kvplan.engines.backends import AttentionBackend
from kvplan.errors import InputError
from kvplan.family import Family

#: ``dspark_config.DEFAULT_DSPARK_GAMMA``: the block size when neither the flag nor the draft checkpoint gives one
DEFAULT_DSPARK_GAMMA = 7
#: the request cap the EAGLE / DSpark / DFLASH / NGRAM / FROZEN_KV_MTP handlers set when the flag is unset
SPEC_DEFAULT_MAX_RUNNING_REQUESTS = 48
#: ``_handle_ngram``: draft tokens when unset; ``fields/spec.py`` ``speculative_ngram_max_bfs_breadth`` default
NGRAM_DEFAULT_DRAFT_TOKENS = 12
NGRAM_DEFAULT_BFS_BREADTH = 10
#: ``_auto_choose_speculative_params``: (steps, top-k, draft tokens) for every architecture kvplan sizes
EAGLE_AUTO_PARAMS = (3, 1, 4)

#: Outside the DeepSeek-V4 family kvplan keeps the EAGLE family as it was recorded before issue 17
#: (tests/golden/contract/fit-kimi-k2-mtp.json): ``--speculative-num-draft-tokens`` as given (no auto choice) and an
#: unset request cap derived, where SGLang 0.5.23's ``_handle_eagle_family`` sets 48 and auto-chooses (3, 1, 4).
LEGACY_EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "MTP"})


@dataclass(frozen=True)
class SpecRequest:
    """What the user asked for, and the deployment facts the handlers check."""

    algorithm: str | None = None  # --speculative-algorithm as given
    num_draft_tokens: int | None = None  # --speculative-num-draft-tokens
    dspark_block_size: int | None = None  # --speculative-dspark-block-size
    config: Mapping[str, Any] = field(default_factory=dict)  # the target's (flattened) config
    family: Family | None = None
    engine_version: str | None = None
    tp: int = 1
    pp: int = 1
    attn_dp: int = 1
    vendor: str = "nvidia"
    attention_backend: AttentionBackend | None = None


@dataclass(frozen=True)
class SpecPlan:
    """The resolved speculative configuration (``algorithm == ""``: speculation off)."""

    algorithm: str = ""  # the engine's name after the alias (NEXTN -> EAGLE)
    requested: str = ""  # as given, upper-case
    num_draft_tokens: int = 0  # speculative_num_draft_tokens (0: none resolved / off)
    num_steps: int | None = None
    topk: int | None = None
    block_size: int | None = None  # DSpark gamma (num_draft_tokens = gamma + 1)
    draft_kv: str = "none"  # eagle | dflash | none: what the pool configurator prices
    mrr_default: int | None = None  # what the handler sets an unset --max-running-requests to
    draft_stages: int = 0  # DeepSeek-V4: layers of the draft worker's SWA-only pool
    legacy: bool = False  # resolved as recorded before issue 17 (LEGACY_EAGLE_FAMILY): pools read as given
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def on(self) -> bool:
        return bool(self.algorithm)


@dataclass(frozen=True)
class FamilyRule:
    """A family's model-hook rule on speculative decoding (``handle_model_specific_adjustments``)."""

    check: Callable[[SpecRequest, str], SpecPlan]  # (request, upper-case name) -> a partial plan, or InputError
    legacy_eagle: bool = True  # keep the pre-issue-17 EAGLE resolution (LEGACY_EAGLE_FAMILY)


def _fail(message: str, *, field: str = "--speculative-algorithm", hint: str = "") -> InputError:
    return InputError(message, field=field, hint=hint or None)


# ----------------------------------------------------------------------------------------------------------
# Per-algorithm handlers (speculative_hook.py): each returns the plan for a request the family rule allowed
# ----------------------------------------------------------------------------------------------------------


def _eagle(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_eagle_family``: (3, 1, 4) auto-chosen when the steps are unset; top-k 1 -> draft tokens = steps + 1.

    kvplan has no ``--speculative-num-steps``: a given ``--speculative-num-draft-tokens N`` is read as steps N - 1,
    top-k 1 (SGLang asserts the draft tokens are unset when it auto-chooses the steps)."""
    n = req.num_draft_tokens
    if legacy:  # the pools read the name and the draft tokens as given, as before issue 17
        return replace(base, algorithm=base.requested, num_draft_tokens=n or 0, num_steps=None, topk=None, legacy=True)
    notes = list(base.notes)
    if n:
        steps = max(1, n - 1)
        notes.append(
            f"speculative {base.algorithm}: {n} draft tokens read as steps {steps}, top-k 1 (kvplan has no "
            f"--speculative-num-steps)"
        )
    else:
        steps, _, n = EAGLE_AUTO_PARAMS
        notes.append(
            f"speculative {base.algorithm}: steps {steps}, top-k 1, {n} draft tokens "
            f"(SGLang's _auto_choose_speculative_params)"
        )
    return replace(
        base,
        num_draft_tokens=n,
        num_steps=steps,
        topk=1,
        mrr_default=SPEC_DEFAULT_MAX_RUNNING_REQUESTS,
        notes=tuple(notes),
    )


def _frozen_kv_mtp(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_frozen_kv_mtp``: only the 48 request cap; the pool prices it as EAGLE (``is_eagle`` includes it)."""
    del legacy
    n = req.num_draft_tokens or 0
    note = (
        "speculative FROZEN_KV_MTP (a Gemma4 assistant draft): the pool prices it as EAGLE (is_eagle() includes "
        "it); the draft's layer count comes from the draft checkpoint, which kvplan does not read: one layer of "
        "the target's shape assumed"
    )
    return replace(
        base,
        num_draft_tokens=n,
        num_steps=max(1, n - 1) if n else None,
        topk=1 if n else None,
        mrr_default=SPEC_DEFAULT_MAX_RUNNING_REQUESTS,
        notes=(*base.notes, note),
    )


def _ngram(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_ngram``: 12 draft tokens when unset, top-k = the BFS breadth (10), steps = drafts // top-k; no draft
    KV; no DP attention; CUDA/CPU/XPU only."""
    del legacy
    if req.attn_dp > 1:
        raise _fail(
            "Currently ngram speculative decoding does not support dp attention (SGLang)",
            hint="drop --enable-dp-attention or the speculative algorithm",
        )
    n = req.num_draft_tokens or NGRAM_DEFAULT_DRAFT_TOKENS
    topk = NGRAM_DEFAULT_BFS_BREADTH
    note = (
        f"speculative NGRAM: {n} draft tokens, top-k {topk}, steps {n // topk}; no draft KV (the tree lives in "
        f"the verify mask, has_draft_kv() is False)"
    )
    return replace(
        base,
        num_draft_tokens=n,
        num_steps=max(1, n // topk),
        topk=topk,
        mrr_default=SPEC_DEFAULT_MAX_RUNNING_REQUESTS,
        notes=(*base.notes, note),
    )


def _dflash(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_dflash``: PP 1 only; a separate draft checkpoint is required (its config sizes the draft KV)."""
    del base, legacy
    if req.pp != 1:
        raise _fail(
            "Currently DFLASH speculative decoding only supports pp_size == 1 (SGLang)",
            field="--pp-size",
            hint="use --pp-size 1",
        )
    raise _fail(
        "DFLASH speculative decoding requires setting --speculative-draft-model-path (SGLang); its draft KV "
        "(kv heads x (head_dim + v_head_dim) x draft layers per token) comes from that checkpoint's config, "
        "which kvplan does not read",
        hint="plan without speculation, or with EAGLE / NGRAM",
    )


def _dspark(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_dspark``: steps 1, top-k 1, gamma from the flag, else the draft checkpoint's ``dspark_block_size``,
    else (with the draft tokens unset too) 7; draft tokens = gamma + 1 (>= 2); PP only on PD prefill; 48 requests."""
    del legacy
    if req.pp != 1:
        raise _fail(
            "DSpark pipeline parallelism requires PD prefill; decode and non-disaggregated serving require "
            "pp_size == 1 (SGLang)",
            field="--pp-size",
            hint="use --pp-size 1",
        )
    gamma, source = _dspark_gamma(req, checkpoint=base.block_size)
    n = req.num_draft_tokens
    if gamma is not None:
        if n is not None and n != gamma + 1:
            raise _fail(
                f"DSpark speculative_num_draft_tokens must equal gamma + 1 (= {gamma + 1} for gamma={gamma}), "
                f"but got speculative_num_draft_tokens={n} (SGLang)",
                field="--speculative-num-draft-tokens",
                hint=f"drop it, or set --speculative-dspark-block-size {n - 1}" if n > 1 else "drop it",
            )
        n = gamma + 1
    assert n is not None  # _dspark_gamma returns a gamma whenever the draft tokens are unset
    if n < 2:
        raise _fail(
            f"DSpark speculative_num_draft_tokens must be >= 2 (= gamma + 1), got {n} (SGLang)",
            field="--speculative-num-draft-tokens",
        )
    notes = [
        f"speculative DSPARK: block size (gamma) {gamma if gamma is not None else n - 1} ({source}) -> "
        f"speculative_num_draft_tokens {n} = gamma + 1, steps 1, top-k 1"
    ]
    warnings: list[str] = []
    if req.attn_dp > 1:
        warnings.append(
            "DSpark with DP attention requires --enable-dp-lm-head (SGLang refuses without it); kvplan "
            "plans as if it were given"
        )
    return replace(
        base,
        num_draft_tokens=n,
        num_steps=1,
        topk=1,
        block_size=gamma if gamma is not None else n - 1,
        mrr_default=SPEC_DEFAULT_MAX_RUNNING_REQUESTS,
        notes=(*base.notes, *notes),
        warnings=(*base.warnings, *warnings),
    )


def _dspark_gamma(req: SpecRequest, *, checkpoint: int | None) -> tuple[int | None, str]:
    """(gamma, where it came from); ``checkpoint`` = the bundled draft's ``dspark_block_size`` (the family rule read
    it); gamma None only when the draft tokens were given and nothing else sets it."""
    if req.dspark_block_size is not None:
        if (
            isinstance(req.dspark_block_size, bool)
            or not isinstance(req.dspark_block_size, int)
            or req.dspark_block_size <= 0
        ):
            raise _fail(
                f"DSpark requires --speculative-dspark-block-size to be positive, got "
                f"{req.dspark_block_size!r} (SGLang)",
                field="--speculative-dspark-block-size",
            )
        return req.dspark_block_size, "--speculative-dspark-block-size"
    if checkpoint is not None:
        return checkpoint, "the checkpoint's dspark_block_size"
    if req.num_draft_tokens is None:
        return DEFAULT_DSPARK_GAMMA, "SGLang's DEFAULT_DSPARK_GAMMA, no block size given or in the checkpoint"
    return None, "--speculative-num-draft-tokens"


def _uno(req: SpecRequest, base: SpecPlan, *, legacy: bool) -> SpecPlan:
    """``_handle_uno``: CUDA, TP = PP = 1, no DP attention, FA3, ``--speculative-num-draft-tokens`` given (the verify
    width Q); no draft model and no draft KV (the target with a LoRA); each decode allocates Q + 1."""
    del legacy
    if req.vendor != "nvidia":
        raise _fail("UNO only supports CUDA (SGLang)")
    if (req.tp, req.pp) != (1, 1):
        raise _fail("UNO requires TP=PP=1 (SGLang)", field="--tp-size", hint="use --tp 1 --pp 1")
    if req.attn_dp > 1:
        raise _fail("UNO does not support DP attention or context parallelism (SGLang)")
    folded = AttentionBackend.parse(req.attention_backend, fold=True)  # SGLang's check reads it case-folded
    if folded is not None and folded != AttentionBackend.FA3:
        raise _fail(
            f"UNO requires FA3 for both prefill and decode attention; got {str(req.attention_backend)!r} (SGLang)",
            field="--attention-backend",
            hint="use --attention-backend fa3",
        )
    n = req.num_draft_tokens
    if not n or n < 1:
        raise _fail(
            "UNO requires --speculative-num-draft-tokens to be a positive integer denoting the linear width "
            "or tree verify width Q (SGLang)",
            field="--speculative-num-draft-tokens",
        )
    note = (
        f"speculative UNO: verify width {n}, no draft model and no draft KV (the target with --uno-lora-path; "
        f"the LoRA weights are not counted), {n + 1} slots per decode step"
    )
    return replace(base, num_draft_tokens=n, num_steps=1, topk=1, notes=(*base.notes, note))


@dataclass(frozen=True)
class Algorithm:
    """One SGLang speculative algorithm: its handler, the draft KV the pools price, the first release with it."""

    name: str
    handler: Callable[..., SpecPlan]
    draft_kv: str
    since: str | None = None  # None: as old as speculative decoding in the releases kvplan models


ALGORITHMS: Mapping[str, Algorithm] = MappingProxyType(
    {
        a.name: a
        for a in (
            Algorithm("EAGLE", _eagle, "eagle"),
            Algorithm("EAGLE3", _eagle, "eagle", since="0.4.4.post2"),
            Algorithm("STANDALONE", _eagle, "eagle", since="0.5.2"),
            Algorithm("FROZEN_KV_MTP", _frozen_kv_mtp, "eagle", since="0.5.12"),
            Algorithm("NGRAM", _ngram, "none", since="0.5.3"),
            Algorithm("DFLASH", _dflash, "dflash", since="0.5.11"),
            Algorithm("DSPARK", _dspark, "dflash", since="0.5.16"),
            Algorithm("UNO", _uno, "none", since="0.5.20"),
        )
    }
)
#: spellings SGLang resolves to another algorithm (``spec_registry._RESERVED_ALIASES``), and vLLM's MTP
ALIASES: Mapping[str, str] = MappingProxyType({"NEXTN": "EAGLE", "MTP": "EAGLE"})


# ----------------------------------------------------------------------------------------------------------
# Family rules (the model hooks run before the speculative hook)
# ----------------------------------------------------------------------------------------------------------


def _dsv4_rule(req: SpecRequest, name: str) -> SpecPlan:
    """``apply_deepseek_v4_defaults`` / ``validate_deepseek_v41_features``: V4 takes EAGLE (top-k 1) or DSPARK as
    typed (the check runs before NEXTN becomes EAGLE); V4.1 only DSPARK.  V4.1's pipeline-parallelism refusal runs
    before this rule, in ``plan_sglang``'s model hook (``pools.dsv4.eras.refuse_v41_pipeline``)."""
    from kvplan.geometry.dsv4 import dsv4_geometry_from_config

    g = dsv4_geometry_from_config(req.config)
    allowed = ("DSPARK",) if g.is_v41 else ("EAGLE", "DSPARK")
    if name not in allowed:
        why = (
            "DeepSeek-V4.1 does not support speculative decoding other than DSpark yet; disable it to serve this "
            "model (SGLang)"
            if g.is_v41
            else "Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM (SGLang checks "
            "the name as given, before NEXTN becomes EAGLE)"
        )
        raise _fail(f"--speculative-algorithm {name}: {why}", hint="use " + " or ".join(allowed))
    notes: list[str] = []
    stages = g.dspark_stages if name == "DSPARK" else max(1, g.num_nextn_predict_layers)
    if name == "DSPARK":
        where = (
            "bundled in the target checkpoint (dspark_* keys): --speculative-draft-model-path defaults to the "
            "model path"
            if g.bundles_dspark_draft
            else "not bundled in this config: SGLang takes --speculative-draft-model-path or the checkpoint's dspark/ "
            "subfolder and refuses without one (kvplan cannot see it and assumes it is there)"
        )
        notes.append(
            f"DSpark draft {where}; {stages} DeepSeek-V4 decoder stage(s), SWA-only KV "
            f"(deepseek_v4_dspark.py DSparkAttention, compress_ratio 0)"
        )
    else:
        notes.append(
            f"EAGLE draft: the checkpoint's NextN layer(s) ({stages}), SWA-only KV "
            f"(DeepseekV4ForCausalLMNextN, compress_ratio 0)"
        )
    return SpecPlan(
        draft_stages=stages, block_size=g.dspark_block_size if name == "DSPARK" else None, notes=tuple(notes)
    )


FAMILY_RULES: Mapping[Family, FamilyRule] = MappingProxyType(
    {
        Family.DSV4: FamilyRule(check=_dsv4_rule, legacy_eagle=False),
        # Mamba / linear hybrids (Qwen3.5 / 3.6, Qwen3-Next, Nemotron-H): SGLang 0.5.23's _handle_eagle_family sets an
        # unset --max-running-requests to 48 before the state pool is sized (arg_groups/speculative_hook.py), so the
        # SGLang cookbook's Qwen3.6-35B-A3B EAGLE launch (no --max-running-requests) starts; the legacy reading (cap
        # unset) made the Mamba pool refuse it (issue 24 item 5)
        Family.HYBRID_MAMBA: FamilyRule(check=lambda req, requested: SpecPlan(), legacy_eagle=False),
    }
)


def _non_dsv4_dspark(req: SpecRequest, name: str) -> None:
    if name == "DSPARK" and (req.family is None or req.family not in FAMILY_RULES):
        raise _fail(
            "kvplan sizes DSPARK only for DeepSeek-V4-family targets: elsewhere its draft KV (SGLang's "
            "DFLASH-family cell) comes from the draft checkpoint's config, which kvplan does not read",
            hint="plan without speculation, or with EAGLE / NGRAM",
        )


def _check_release(name: str, engine_version: str | None) -> None:
    algo = ALGORITHMS[name]
    if engine_version is None or algo.since is None:
        return
    from kvplan.engines.sglang.releases import read_release
    from kvplan.version import Version

    rel = read_release(engine_version)
    if rel.key < Version.of(algo.since):
        raise InputError(
            f"SGLang {rel.requested} has no {name} speculative algorithm (the first release with it is {algo.since})",
            field="--engine-version",
            hint=f"use --engine-version {algo.since} or newer",
        )


def resolve_speculative(req: SpecRequest) -> SpecPlan:
    """The speculative configuration SGLang resolves for ``req`` (see the module docstring), or InputError naming the
    flag when SGLang refuses it.  Speculation off -> ``SpecPlan()``.

    Example: DeepSeek-V4.1-Flash, DSPARK, no block size -> gamma 5 (the checkpoint's ``dspark_block_size``), 6 draft
    tokens; with ``--speculative-dspark-block-size 6`` -> 7; with ``--speculative-num-draft-tokens 7`` and no block
    size -> InputError (the checkpoint's gamma 5 wants 6).
    """
    requested = (req.algorithm or "").strip().upper()
    if not requested:
        return SpecPlan()
    name = ALIASES.get(requested, requested)
    if name not in ALGORITHMS:
        raise _fail(
            f"unknown speculative algorithm {req.algorithm!r}",
            hint="use one of " + ", ".join(sorted({*ALGORITHMS, *ALIASES})),
        )
    rule = FAMILY_RULES.get(req.family) if req.family is not None else None
    base = rule.check(req, requested) if rule is not None else SpecPlan()
    _non_dsv4_dspark(req, name)
    _check_release(name, req.engine_version)
    algo = ALGORITHMS[name]
    legacy = requested in LEGACY_EAGLE_FAMILY and (rule is None or rule.legacy_eagle)
    base = replace(base, algorithm=name, requested=requested, draft_kv=algo.draft_kv)
    if requested == "MTP":
        base = replace(
            base,
            warnings=(
                *base.warnings,
                "SGLang has no speculative algorithm named MTP (vLLM's name; "
                "SpeculativeAlgorithm.from_string raises): planned as NEXTN (EAGLE)",
            ),
        )
    plan: SpecPlan = algo.handler(req, base, legacy=legacy)
    if req.dspark_block_size is not None and name != "DSPARK":
        plan = replace(
            plan,
            warnings=(
                *plan.warnings,
                f"--speculative-dspark-block-size ignored: only DSPARK reads it (the algorithm is {name})",
            ),
        )
    return plan


# ----------------------------------------------------------------------------------------------------------
# Per-request reservations that grow with the draft tokens
# ----------------------------------------------------------------------------------------------------------


def decode_alloc_len(*, plan: SpecPlan, page_size: int) -> int:
    """KV slots one request may allocate in one decode step: 1 without speculation; UNO ``Q + 1``; top-k 1 (or page
    1, or no draft KV) ``max(steps * topk, drafts)``; else the page-aligned tree footprint.

    Source: ``mem_cache/allocation_sizing.py get_alloc_len_per_decode`` (v0.5.23).  Example: DSPARK block 6 ->
    max(1 x 1, 7) = 7.
    """
    if not plan.on:
        return 1
    steps, topk, n = plan.num_steps or 1, plan.topk or 1, plan.num_draft_tokens
    if plan.algorithm == "UNO":
        return n + 1
    if page_size == 1 or topk == 1 or plan.draft_kv == "none":
        return max(steps * topk, n)
    per_branch = ((page_size - 1) + steps + page_size - 1) // page_size
    return max(per_branch * page_size * topk, n)


def req_to_token_extra_len(*, plan: SpecPlan, page_size: int) -> int:
    """Slots each ``req_to_token`` row holds beyond the context: ``4 + drafts``; with pages > 1 (or UNO) at least the
    double-buffered decode reserve ``2 * alloc + page - 1``.

    Source: ``allocation_sizing.py get_req_to_token_extra_context_len`` (v0.5.23).  Example: DSPARK block 6, page
    256 -> max(4 + 7, 2 x 7 + 255) = 269; without speculation 4.
    """
    extra = 4 + plan.num_draft_tokens
    if plan.on and (page_size > 1 or plan.algorithm == "UNO"):
        extra = max(extra, 2 * decode_alloc_len(plan=plan, page_size=page_size) + page_size - 1)
    return extra


def req_to_token_bytes(*, plan: SpecPlan, page_size: int, context_len: int, max_running_requests: int) -> int:
    """Bytes of the ``req_to_token`` table: ``(mrr + 1) x (context + extra) x 4`` (int32, one spare row).

    Source: ``mem_cache/memory_pool.py ReqToTokenPool.__init__`` (``size + 1`` rows of ``max_context_len`` int32) and
    ``kv_cache_configurator._build_req_to_token_pool`` (v0.5.23).  Example: 8 requests, 1,048,576 context, DSPARK block
    6 -> 9 x 1,048,845 x 4 = 37,758,420 B.
    """
    extra = req_to_token_extra_len(plan=plan, page_size=page_size)
    return (max_running_requests + 1) * (context_len + extra) * 4

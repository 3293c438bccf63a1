"""SGLang's pools for Mamba / linear-attention hybrids (Qwen3-Next, Qwen3.5/3.6/3.8, Nemotron-H, Granite-4 hybrid,
Falcon-H1, Kimi-Linear): the state carve, the attention KV pool, the planner (SGLang 0.5.23).

The geometry (attention vs linear layers, state shapes) is :mod:`kvplan.geometry.mamba`.

Such a model has two kinds of layers: *attention* layers, which keep an ordinary per-token KV cache,
and *linear* layers (Mamba2 / Gated DeltaNet / KDA), which keep a fixed-size state per request (a
short convolution window and a recurrent SSM matrix). SGLang first carves a pool of per-request state
slots out of the KV budget, then sizes the attention KV pool from what is left:

    rest      = budget (GiB, after weights, reserve and multimodal reservation)
    K         = max_mamba_cache_size: --max-mamba-cache-size // dp | mrr // dp (radix off + mrr) |
                int((rest * r / (1 + r) * 2^30 - per_req) // per_req)          r = --mamba-full-memory-ratio 0.9
    rest     -= (K + 1) * per_req / 2^30                                        (+1: the pool's padding slot)
    tokens    = page_floor(int(rest * 2^30) // attention_cell)                  (attention layers only)
    mrr      <= K // mamba_ratio      (1 without radix cache; 3 + extra-buffer slots with it: 5 by default)

By release (``RuleSet.pool_rules.mamba_cache_sizing``, issue 12; docs/layouts/mamba.md section 5):
:class:`CarveRules` and :func:`mamba_state_slots` hold the carves of 0.5.2 - 0.5.3 (fixed slots), 0.5.4 - 0.5.6,
0.5.7, 0.5.8 - 0.5.12, 0.5.13 - 0.5.16 (no padding slot) and 0.5.17+; :func:`release_radix_cache` the radix-cache
switch-offs of 0.5.5 - 0.5.13.

Sources (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/configs/mamba_utils.py``: ``Mamba2StateShape.create``, ``KimiLinearStateShape.create``,
  ``extra_groups_for_head_shards``, ``mamba2_state_dtype``, ``BaseLinearStateParams.mamba_cache_per_req``;
* ``sglang/srt/configs/qwen3_next.py`` (Qwen3.5 inherits it through ``Qwen3_5TextConfig``),
  ``nemotron_h.py``, ``granitemoehybrid.py``, ``falcon_h1.py``, ``kimi_linear.py``: layer ids and the
  ``mamba2_cache_params`` arguments; ``sglang/srt/configs/hybrid_arch.py`` ``mambaish_config``;
* ``sglang/srt/mem_cache/kv_cache_configurator.py``: ``KVCacheConfigurator._handle_max_mamba_cache``,
  ``_calculate_mamba_ratio``, ``resolve_max_num_reqs``, ``_profile_available_bytes``;
* ``sglang/srt/model_executor/pool_configurator.py``: ``DefaultPoolConfigurator.__init__`` (attention layers
  = ``full_attention_layer_ids`` inside the PP stage);
* ``sglang/srt/arg_groups/overrides.py``: ``_mamba_radix_cache_resolution``, ``_MAMBA_EXTRA_BUFFER_ARCHS``;
  ``sglang/srt/mem_cache/allocation_sizing.py`` ``get_mamba_tracking_slots``;
* ``sglang/srt/environ.py``: ``SGLANG_MAMBA_CONV_DTYPE`` (bfloat16), ``SGLANG_MAMBA_SSM_DTYPE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from kvplan.engines.backends import AttentionBackend, MambaSsmDtype, ssm_state_dtype
from kvplan.engines.sglang.pools.base import SHOW_TPS, Breakdown, PoolContext, PoolPlan, request_cap
from kvplan.engines.sglang.pools.gqa import gqa_bytes_per_token
from kvplan.engines.sglang.pools.mamba_knobs import CarveKnobs
from kvplan.engines.sglang.pools.mla import mla_bytes_per_token
from kvplan.engines.sglang.pools.swa_cap import vint, vmax, vmin, vwhere
from kvplan.errors import EngineRefusal, InputError
from kvplan.family import Family
from kvplan.geometry.mamba import MambaGeometry, mamba_geometry_from_config, mamba_state_bytes
from kvplan.hfconfig.dtypes import DType, dtype_of
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.result import Pool
from kvplan.units import GiB as GIB
from kvplan.version import Version

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools
    from kvplan.hfconfig.spec import ModelSpec


_Backend: TypeAlias = "AttentionBackend | None"  # --attention-backend as the pool rules read it
_Ssm: TypeAlias = "MambaSsmDtype | None"  # --mamba-ssm-dtype (None: the config's)
#: the state dtypes SGLang's Mamba flags and env vars take (``mamba2_state_dtype``), by every spelling kvplan reads
_STATE_DTYPES: tuple[DType, ...] = (DType.FP32, DType.BF16, DType.FP16)
#: the ``mamba_ssm_dtype`` config values SGLang honours (an unknown one falls back to float32)
_CONFIG_SSM_DTYPES = ("float32", "bfloat16", "float16")

#: ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` (kv_cache_configurator.py).
MAMBA_BASE_RATIO = 3

#: ``_MAMBA_EXTRA_BUFFER_ARCHS`` (arg_groups/overrides.py, v0.5.23), the hybrids kvplan reads.
EXTRA_BUFFER_ARCHS = frozenset(
    {
        "KimiLinearForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5ForCausalLM",
        "Qwen3NextForCausalLM",
        "FalconH1ForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "NemotronH_Omni_Reasoning_V3",
        "InternS2PreviewForConditionalGeneration",
        "Qwen4ExpForConditionalGeneration",
    }
)


# --------------------------------------------------------------------------------------------------
# State bytes
# --------------------------------------------------------------------------------------------------


def _dtype_bytes(name: str, field: str) -> int:
    key = str(name).strip().lower()
    d = dtype_of(key)
    # the torch names (float32 ...) and kvplan's short ones (fp32 ...), nothing else (not half, not torch.float16)
    if d not in _STATE_DTYPES or key not in (d.canonical, *_CONFIG_SSM_DTYPES):
        raise InputError(f"unknown Mamba state dtype {name!r}", field=field, hint="float32, bfloat16 or float16")
    return d.bytes


def mamba_state_dtypes(
    *, geometry: MambaGeometry, ssm_dtype: _Ssm = None, conv_dtype: str = "bfloat16"
) -> tuple[int, int]:
    """``(conv_bytes, ssm_bytes)`` per element. SSM: ``--mamba-ssm-dtype`` (env ``SGLANG_MAMBA_SSM_DTYPE``)
    > the config's ``mamba_ssm_dtype`` (only for classes that pass it) > float32; an unknown config value
    falls back to float32 (SGLang warns). Conv: ``SGLANG_MAMBA_CONV_DTYPE`` (bfloat16).

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py ``mamba2_state_dtype``, v0.5.23.
    """
    conv_b = _dtype_bytes(conv_dtype, "SGLANG_MAMBA_CONV_DTYPE")
    if ssm_dtype is not None:
        return conv_b, ssm_state_dtype(ssm_dtype).bytes
    cfg = geometry.config_ssm_dtype
    if cfg in _CONFIG_SSM_DTYPES:
        return conv_b, _dtype_bytes(cfg, "mamba_ssm_dtype")
    return conv_b, 4


def mamba_state_bytes_per_layer(*, geometry: MambaGeometry, tp_size: int, ssm_dtype: _Ssm = None) -> int:
    """Bytes of one request's state in one linear layer: ``prod(conv) * conv_b + prod(ssm) * ssm_b``.

    Example: Qwen3-Next TP2, fp32 ssm: 4096 x 3 x 2 + 16 x 128 x 128 x 4 = 24,576 + 1,048,576 = 1,073,152.
    """
    conv_b, ssm_b = mamba_state_dtypes(geometry=geometry, ssm_dtype=ssm_dtype)
    return mamba_state_bytes(geometry=geometry, tp_size=tp_size, conv_bytes=conv_b, ssm_bytes=ssm_b)


def mamba_state_bytes_per_request(
    *,
    geometry: MambaGeometry,
    tp_size: int,
    ssm_dtype: _Ssm = None,
    stage_layers: tuple[int, int] | None = None,
    pp_size: int = 1,
) -> int:
    """Per-request state bytes one rank budgets (``stage_per_req``).

    ``per_req = per_layer * len(linear_layers)`` (``mamba_cache_per_req``). Under PP SGLang charges every
    rank the *largest* stage's share: ``int(per_req * max_stage_linear_layers / len(linear_layers))``
    (pass ``pp_size``). ``stage_layers=(start, end)`` instead returns what that stage's pool allocates per
    slot (``per_layer * linear layers in the stage``).

    Examples: Qwen3-Next-80B TP2: 1,073,152 x 36 = 38,633,472 B; Nemotron-3-Nano TP1: 2,134,016 x 23 =
    49,082,368 B; Nemotron-3-Nano PP3 (stages 17/17/18 layers with 8/7/8 Mamba layers): 8/23 of that =
    17,072,128 B.

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py
    ``BaseLinearStateParams.mamba_cache_per_req``; python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache`` (``pp_layer_scale``), v0.5.23.
    """
    per_layer = mamba_state_bytes_per_layer(geometry=geometry, tp_size=tp_size, ssm_dtype=ssm_dtype)
    lin = geometry.linear_layers
    if stage_layers is not None:
        s, e = stage_layers
        return per_layer * sum(s <= i < e for i in lin)
    per_req = per_layer * len(lin)
    if pp_size > 1 and lin:
        ranges = pp_layer_ranges(num_layers=geometry.num_hidden_layers, pp_size=pp_size)
        most = max(sum(s <= i < e for i in lin) for s, e in ranges)
        return int(per_req * (most / len(lin)))
    return per_req


# --------------------------------------------------------------------------------------------------
# The carve
# --------------------------------------------------------------------------------------------------


def mamba_ratio(
    *,
    radix_cache: bool = True,
    overlap_schedule: bool = True,
    page_size: int = 1,
    architecture: str = "",
    strategy: str = "auto",
    skip_decode_lock: bool = False,
) -> int:
    """State slots SGLang reserves per running request (``max_running_requests <= K // ratio``).

    Radix cache off -> 1. Otherwise ``--mamba-radix-cache-strategy auto`` resolves to ``extra_buffer``
    when the overlap schedule is on or the page size is > 1 and the architecture supports it (triton
    linear-attention backend; Qwen3-Next/3.5, Nemotron-H, Granite hybrid, Falcon-H1, Kimi-Linear), else to
    ``no_buffer`` (and the overlap schedule is turned off). ratio = 3 (2 with
    ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK``) + tracking slots: extra_buffer 2 with overlap / 1 without
    (``extra_buffer_lazy`` 1); no_buffer 0 (1 with the skip-decode-lock option).
    Defaults (radix on, overlap on) -> 5.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._calculate_mamba_ratio``; python/sglang/srt/arg_groups/overrides.py
    ``_mamba_radix_cache_resolution``; python/sglang/srt/mem_cache/allocation_sizing.py
    ``get_mamba_tracking_slots``, v0.5.23.
    """
    if not radix_cache:
        return 1
    if strategy == "auto":
        wants = overlap_schedule or page_size > 1
        strategy = "extra_buffer" if wants and architecture in EXTRA_BUFFER_ARCHS else "no_buffer"
        if strategy == "no_buffer":
            overlap_schedule = False
    base = MAMBA_BASE_RATIO - (1 if skip_decode_lock else 0)
    if strategy == "extra_buffer_lazy":
        return base + 1
    if strategy == "extra_buffer":
        return base + (2 if overlap_schedule else 1)
    if strategy == "no_buffer":
        return base + (1 if skip_decode_lock else 0)
    raise InputError(
        f"unknown --mamba-radix-cache-strategy {strategy!r}",
        field="--mamba-radix-cache-strategy",
        hint="auto, no_buffer, extra_buffer or extra_buffer_lazy",
    )


@dataclass(frozen=True)
class MambaPools:
    """Result of :func:`mamba_carve` for one attention rank."""

    mamba_slots: int  # max_mamba_cache_size per rank (K); the pool allocates K + 1 slots
    state_bytes: int  # (K + 1) * per_request_bytes (+ speculative intermediate states)
    per_request_bytes: int
    kv_budget_bytes: int  # what is left for the attention KV pool (int(rest * 2^30))
    mamba_ratio: int
    max_running_requests_cap: int  # K // mamba_ratio
    notes: tuple[str, ...]
    mode: str = "ratio"  # "ratio" | "explicit" | "max-running-requests" | "fallback"
    intermediate_bytes: int = 0  # speculative intermediate SSM states
    padding_slots: int = 1  # the pool's padding slot in the budget (0 before SGLang 0.5.17)

    @property
    def components(self) -> tuple[tuple[str, int], ...]:
        out = [("linear-attention state", (self.mamba_slots + self.padding_slots) * self.per_request_bytes)]
        if self.intermediate_bytes:
            out.append(("speculative intermediate state", self.intermediate_bytes))
        return tuple(out)


#: the state-carve rules of one SGLang release (``RuleSet.pool_rules``: ``mamba_cache_sizing``,
#: ``mamba_fallback_slots``) with the two rules that live outside it: the architectures whose radix cache the release
#: turns off and those whose slot count it divides by the DP size.  ``kvplan fit`` / ``sweep`` build one per plan.
class CarveRules:
    """``sizing`` = ``pool_rules.mamba_cache_sizing`` of the release, as history.py keys it from the wheels: "fixed"
    (0.5.2 - 0.5.3), "ratio_0504" (0.5.4 - 0.5.6), "ratio_0507" (0.5.7), "ratio_0508" (0.5.8 - 0.5.12),
    "ratio_0513" (0.5.13 - 0.5.16) or "ratio" (0.5.17+, 0.5.23's); ``fallback_slots``: the slots when radix cache is
    off and nothing sets them (512 up to 0.5.8); ``padding``: the pool's padding slot the budget pays for (0.5.17+:
    1); ``pp_scaled``: the per-request bytes are the largest PP stage's share (0.5.17+) instead of the whole
    model's."""

    __slots__ = ("fallback_slots", "padding", "pp_scaled", "sizing")

    def __init__(self, *, sizing: str = "ratio", fallback_slots: int | None = None) -> None:
        if sizing not in _SIZINGS:
            raise ValueError(f"unknown mamba_cache_sizing {sizing!r}")
        self.sizing, self.fallback_slots = sizing, fallback_slots
        self.padding = 1 if sizing == "ratio" else 0
        self.pp_scaled = sizing == "ratio"

    @classmethod
    def of(cls, rules: Any) -> CarveRules:
        """The carve rules of a :class:`kvplan.engines.sglang.releases.RuleSet` (``pool_rules``), as they are.
        Example: the 0.5.9 window -> sizing "ratio_0508", fallback None."""
        pr = rules.pool_rules
        return cls(sizing=pr.mamba_cache_sizing, fallback_slots=pr.mamba_fallback_slots)


_SIZINGS = frozenset({"fixed", "ratio_0504", "ratio_0507", "ratio_0508", "ratio_0513", "ratio"})
_RATIO_0523 = CarveRules()

#: 0.5.4 - 0.5.6: ``ModelRunner.mamba2_config`` models (Falcon-H1, Nemotron-H) run with the radix cache off
#: (``model_runner.py`` "model detected, disable radix cache"); 0.5.2 - 0.5.3 turn it off for every hybrid
RADIX_OFF_0504 = frozenset({"FalconH1ForCausalLM", "NemotronHForCausalLM", "NemotronH_Nano_VL_V2"})
#: 0.5.4 - 0.5.6 divide the slot count by the DP size only for Qwen3-Next (``hybrid_gdn_config``)
DP_SPLIT_0504 = frozenset({"Qwen3NextForCausalLM"})
#: the first release whose ``--mamba-radix-cache-strategy auto`` can pick ``extra_buffer`` (before: ``no_buffer``,
#: 3 slots per request; server_args.py ``mamba_scheduler_strategy`` "auto" -> "no_buffer" in 0.5.7 - 0.5.13)
EXTRA_BUFFER_AUTO_SINCE = (0, 5, 14)
#: server_args.py "Disabling Radix Cache for {arch} as it is not yet supported": Kimi-Linear 0.5.5 - 0.5.13
#: (``_handle_model_specific_adjustments``; ``_handle_mamba_radix_cache(support_mamba_cache=False)`` from 0.5.9, with
#: Bailing-MoE-V2.5); 0.5.14's ``_handle_mamba_radix_cache`` has no such switch-off
RADIX_UNSUPPORTED = (
    ((0, 5, 5), (0, 5, 13), frozenset({"KimiLinearForCausalLM"})),
    ((0, 5, 9), (0, 5, 13), frozenset({"BailingMoeV2_5ForCausalLM"})),
)


def release_radix_cache(
    *, release: tuple[int, ...], radix_cache: bool, architecture: str, speculative: bool, attention_backend: _Backend
) -> tuple[bool, str | None]:
    """(the radix cache as server_args leaves it for a Mamba hybrid, why it was turned off) in 0.5.5 - 0.5.13
    (0.5.14+ and the carve's own rules, :func:`carve_radix_cache`, are not here)::

        Kimi-Linear 0.5.5 - 0.5.13, Bailing-MoE-V2.5 0.5.9 - 0.5.13      off (radix cache not supported)
        speculative decoding: Nemotron-H 0.5.8, every hybrid 0.5.9        off
                              0.5.10 - 0.5.13 (no_buffer)                 refused (InputError: SGLang raises)
        --attention-backend trtllm_mha, no speculative, 0.5.7 - 0.5.13    off (trtllm_mha needs page > 1)

    Examples: Kimi-Linear under 0.5.9 -> (False, ...); Qwen3-Next + EAGLE under 0.5.9 -> (False, ...); under 0.5.10
    -> InputError; under 0.5.14 -> (True, None).
    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs._handle_model_specific_adjustments``
    (0.5.5 - 0.5.8: the Kimi-Linear, Nemotron-H and Qwen3-Next branches) and ``_handle_mamba_radix_cache``
    (0.5.9 - 0.5.13: the ``no_buffer`` branch), wheels 0.5.5, 0.5.7, 0.5.8, 0.5.9, 0.5.10, 0.5.13, 0.5.14.
    """
    if not radix_cache or not (0, 5, 5) <= release <= (0, 5, 13):
        return radix_cache, None
    if any(lo <= release <= hi and architecture in archs for lo, hi, archs in RADIX_UNSUPPORTED):
        return False, f"SGLang turns the radix cache off for {architecture} (not supported before 0.5.14)"
    if speculative and (release >= (0, 5, 9) or (release >= (0, 5, 8) and architecture == "NemotronHForCausalLM")):
        if release >= (0, 5, 10):
            raise EngineRefusal(
                "this SGLang release refuses speculative decoding on a Mamba hybrid with the radix cache "
                "on ('not compatible with radix cache when using --mamba-scheduler-strategy "
                "no_buffer')",
                field="--disable-radix-cache",
                hint="pass --disable-radix-cache, or use --engine-version 0.5.14 or newer",
            )
        return False, "SGLang turns the radix cache off for speculative decoding on this hybrid"
    if not speculative and release >= (0, 5, 7) and attention_backend == AttentionBackend.TRTLLM_MHA:
        return False, "SGLang turns the radix cache off: trtllm_mha does not support page size 1 (MambaRadixCache)"
    return radix_cache, None


def carve_radix_cache(*, carve: CarveRules, radix_cache: bool, architecture: str) -> bool:
    """The radix cache as the release runs it for a hybrid: off in 0.5.2 - 0.5.3 ("fixed"), off for Falcon-H1 /
    Nemotron-H in 0.5.4 - 0.5.6, else as given.

    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``ModelRunner.__init__``
    ("Hybrid GDN model detected, disable radix cache", 0.5.2 - 0.5.3; "{class_name} model detected, disable radix
    cache", 0.5.4 - 0.5.6).
    """
    if carve.sizing == "fixed":
        return False
    if carve.sizing == "ratio_0504" and architecture in RADIX_OFF_0504:
        return False
    return radix_cache


def mamba_carve(
    *,
    geometry: MambaGeometry,
    budget_bytes: int,
    tp_size: int,
    knobs: CarveKnobs = CarveKnobs(),  # noqa: B008 (an immutable NamedTuple)
    carve: CarveRules | None = None,
) -> MambaPools:
    """Carve the per-request state pool out of a KV budget, as ``_handle_max_mamba_cache`` does; the flags come in
    ``knobs`` (:class:`CarveKnobs`).

    ``budget_bytes`` = ``kvplan.engines.sglang.rules.budget_bytes(...)`` (the multimodal reservation already
    taken off); SGLang works in GiB floats, so ``rest = budget_bytes / 2^30``. ``p`` =
    :func:`mamba_state_bytes_per_request` (with ``pp_size``), ``r`` = ``mamba_full_memory_ratio``,
    ``D`` = speculative draft tokens, ``q`` = :func:`mamba_ratio`; ``carve`` = the release's rules
    (:class:`CarveRules`, None: 0.5.23's; the other releases: :func:`mamba_state_slots`)::

        K = --max-mamba-cache-size // dp                      when given
          = max(1, mrr // dp)                                 radix cache off and --max-running-requests
          = int((rest * r/(1+r) * 2^30 - p) // p)             otherwise, no speculative decoding
          = int((rest * r/(1+r) * 2^30 - p*(1+D)) // (p*(1 + D/q)))   with speculative decoding
        spec: rest -= p * (min(max(1, mrr // dp), K // q) + 1) * D / 2^30   (K + 1 with radix off + mrr)
        rest -= (K + 1) * p / 2^30
        kv_budget = int(rest * 2^30);  max_running_requests <= K // q

    Worked example (Qwen3-Next-80B TP2, budget int(44.59 x 2^30) = 47,878,147,932 B, r 0.9):
    p = 38,633,472; state budget = 0.9/1.9 of it = 22,679,122,705 B -> K = int(586.04) = 586; state =
    587 x p = 22,677,848,064 B; kv_budget = 25,200,299,868 B; q = 5 -> at most 117 running requests.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache``, ``_calculate_mamba_ratio``, ``resolve_max_num_reqs``, v0.5.23.
    """
    cr = _RATIO_0523 if carve is None else carve
    if not float(knobs.mamba_full_memory_ratio) > 0.0:
        raise InputError(
            f"--mamba-full-memory-ratio must be positive, got {knobs.mamba_full_memory_ratio}",
            field="--mamba-full-memory-ratio",
        )
    if knobs.attn_dp_size <= 0:
        raise InputError(f"attn_dp_size must be positive, got {knobs.attn_dp_size}", field="--dp-size")
    p = mamba_state_bytes_per_request(
        geometry=geometry, tp_size=tp_size, ssm_dtype=knobs.ssm_dtype, pp_size=knobs.pp_size if cr.pp_scaled else 1
    )
    if p <= 0:
        raise InputError("the model has no linear-attention layer", field="--model")
    radix = carve_radix_cache(carve=cr, radix_cache=knobs.radix_cache, architecture=geometry.architecture)
    q = mamba_ratio(
        radix_cache=radix,
        overlap_schedule=knobs.overlap_schedule,
        page_size=knobs.page_size,
        architecture=geometry.architecture,
        strategy=knobs.mamba_radix_cache_strategy,
    )
    spec = knobs.speculative_num_draft_tokens > 0 and cr.sizing != "fixed"
    mode = mamba_carve_mode(
        max_mamba_cache_size=knobs.max_mamba_cache_size,
        radix_cache=radix,
        max_running_requests=knobs.max_running_requests,
        carve=cr,
    )
    if spec and knobs.max_running_requests is None and spec_needs_mrr(sizing=cr.sizing, mode=mode):
        raise InputError(
            "speculative decoding on a Mamba hybrid needs --max-running-requests",
            field="--max-running-requests",
            hint="SGLang asserts it is set when sizing the state pool",
        )
    notes: list[str] = []
    from kvplan.engines.sglang.rules import requests_per_worker  # the one clamp (issue 21 item 5)

    mrr_rank = (
        int(requests_per_worker(requested=knobs.max_running_requests, attn_dp_size=knobs.attn_dp_size))
        if knobs.max_running_requests is not None
        else 0
    )
    K, inter, kv_budget = mamba_state_slots(
        mode=mode,
        budget_bytes=budget_bytes,
        per_request_bytes=p,
        slots_per_request=q,
        mamba_full_memory_ratio=float(knobs.mamba_full_memory_ratio),
        explicit_slots=carve_given_slots(
            carve=cr,
            mode=mode,
            max_mamba_cache_size=knobs.max_mamba_cache_size,
            max_running_requests=knobs.max_running_requests,
            attn_dp_size=knobs.attn_dp_size,
            architecture=geometry.architecture,
        ),
        mrr_per_rank=mrr_rank,
        draft_tokens=knobs.speculative_num_draft_tokens if spec else 0,
        sizing=cr.sizing,
        mrr_total=knobs.max_running_requests or 0,
    )
    notes.append(
        _carve_note(
            cr,
            mode=mode,
            K=K,
            p=p,
            r=float(knobs.mamba_full_memory_ratio),
            flag=knobs.max_mamba_cache_size,
            radix_forced=radix != knobs.radix_cache,
        )
    )
    if K <= 0:
        raise EngineRefusal(
            f"not enough memory for the linear-attention state cache (max_mamba_cache_size={K}, "
            f"{p / 2**20:.2f} MiB per request)",
            field="--mem-fraction-static",
            hint="reduce --max-running-requests, raise --mem-fraction-static, or use more GPUs",
        )
    state = (K + cr.padding) * p
    cap = K // q
    if cap <= 0:
        raise EngineRefusal(
            f"the state cache ({K} slots, {q} per request) cannot serve one request",
            field="--mem-fraction-static",
            hint="raise --mamba-full-memory-ratio or --max-mamba-cache-size",
        )
    notes.append(f"max_running_requests <= {K} // {q} = {cap} (mamba state slots per request: {q})")
    if kv_budget <= 0:
        raise EngineRefusal(
            "the linear-attention state leaves no memory for the attention KV cache",
            field="--mem-fraction-static",
            hint="raise --mem-fraction-static or lower the state pool",
        )
    return MambaPools(
        mamba_slots=K,
        state_bytes=state + inter,
        per_request_bytes=p,
        kv_budget_bytes=kv_budget,
        mamba_ratio=q,
        max_running_requests_cap=cap,
        notes=tuple(notes),
        mode=mode,
        intermediate_bytes=inter,
        padding_slots=cr.padding,
    )


def _carve_note(cr: CarveRules, *, mode: str, K: int, p: int, r: float, flag: int | None, radix_forced: bool) -> str:
    """The assumption line of the carve (which rule sized the slots)."""
    if mode == "explicit":
        out = f"max_mamba_cache_size {K} per rank (--max-mamba-cache-size {flag})"
    elif mode == "max-running-requests":
        out = f"max_mamba_cache_size {K} = --max-running-requests per rank (radix cache off)"
    elif mode == "fallback":
        out = f"max_mamba_cache_size {K} = SGLang's fallback {cr.fallback_slots} per rank (radix cache off)"
    else:
        pad = " (+1 padding)" if cr.padding else ""
        out = f"state pool: {K} slots{pad} of {p:,} B from {r}/(1 + {r}) of the budget (--mamba-full-memory-ratio)"
        if cr.sizing == "ratio_0504" and flag is not None:
            out += f"; --max-mamba-cache-size {flag} overwritten (radix cache on)"
    if radix_forced:
        out += "; the release turns the radix cache off for this model"
    return out


def spec_needs_mrr(*, sizing: str, mode: str) -> bool:
    """Whether the release asserts ``--max-running-requests`` is set under speculative decoding: never in 0.5.4 -
    0.5.6, only in ratio mode in 0.5.7, always from 0.5.8.  Source: model_executor/model_runner_kv_cache_mixin.py
    ``handle_max_mamba_cache`` (``assert server_args.max_running_requests is not None``), wheels 0.5.7, 0.5.8."""
    if sizing == "ratio_0504":
        return False
    return mode == "ratio" if sizing == "ratio_0507" else True


def mamba_carve_mode(
    *,
    max_mamba_cache_size: int | None,
    radix_cache: bool,
    max_running_requests: int | None,
    carve: CarveRules | None = None,
) -> str:
    """How SGLang sizes the state pool: ``explicit`` (--max-mamba-cache-size), ``max-running-requests`` (radix cache
    off and --max-running-requests), ``fallback`` (radix cache off, neither set: 512 up to 0.5.8) or ``ratio``
    (--mamba-full-memory-ratio of the budget).  By release (``carve``): 0.5.2 - 0.5.3 never use the ratio (the
    radix cache is off); 0.5.4 - 0.5.6 use it whenever the radix cache is on, even over --max-mamba-cache-size.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache``, v0.5.23 (0.5.17+); model_executor/model_runner_kv_cache_mixin.py
    ``handle_max_mamba_cache``, v0.5.7 - v0.5.16; model_executor/model_runner.py, v0.5.2 - v0.5.6.
    """
    cr = _RATIO_0523 if carve is None else carve
    if cr.sizing == "ratio_0504" and radix_cache:
        return "ratio"
    if max_mamba_cache_size is not None:
        return "explicit"
    if not radix_cache and max_running_requests is not None:
        return "max-running-requests"
    if not radix_cache and cr.fallback_slots is not None:
        return "fallback"
    return "ratio"


def carve_given_slots(
    *,
    carve: CarveRules,
    mode: str,
    max_mamba_cache_size: int | None,
    max_running_requests: int | None,
    attn_dp_size: int,
    architecture: str,
) -> int:
    """The slots of a carve that does not use the ratio (``explicit`` / ``fallback``; ``max-running-requests`` before
    0.5.9 too): the flag / the fallback, divided by the DP size (0.5.4 - 0.5.6: only for Qwen3-Next).  0 in
    ``ratio`` mode.  Example: 0.5.3, no flags, dp 2 -> 512 // 2 = 256."""
    if mode == "ratio":
        return 0
    given = {
        "explicit": max_mamba_cache_size,
        "fallback": carve.fallback_slots,
        "max-running-requests": max_running_requests,
    }[mode]
    return int(given or 0) // carve_dp_divisor(carve=carve, attn_dp_size=attn_dp_size, architecture=architecture)


def carve_dp_divisor(*, carve: CarveRules, attn_dp_size: int, architecture: str) -> int:
    """What the release divides the given slots by: the attention-DP size (0.5.4 - 0.5.6: only for Qwen3-Next's
    ``hybrid_gdn_config``, else 1).  Source: model_executor/model_runner.py ``handle_max_mamba_cache``, v0.5.5."""
    return attn_dp_size if carve.sizing != "ratio_0504" or architecture in DP_SPLIT_0504 else 1


def mamba_state_slots(
    *,
    mode: str,
    budget_bytes: Any,
    per_request_bytes: int,
    slots_per_request: int,
    mamba_full_memory_ratio: float,
    explicit_slots: Any,
    mrr_per_rank: Any,
    draft_tokens: int,
    sizing: str = "ratio",
    mrr_total: Any = None,
) -> tuple[Any, Any, Any]:
    """``(K, intermediate_bytes, kv_budget)`` of the state carve (ints, or numpy arrays of the budget / request cap;
    the GiB floats in the engine's order).  ``p`` = per_request_bytes, ``q`` = slots_per_request, ``D`` =
    draft_tokens, ``r`` = mamba_full_memory_ratio, ``rest = budget / 2^30``, ``mb = rest * r / (1 + r) * 2^30``,
    ``mrr`` = mrr_per_rank (--max-running-requests // dp), ``R`` = mrr_total (the flag itself);
    ``sizing`` = the release's ``pool_rules.mamba_cache_sizing``::

        "ratio" (0.5.17+, 0.5.23):
          explicit : K = explicit_slots;  spec: inter = p * (min(mrr, K // q) + 1) * D
          mrr      : K = mrr;             spec: inter = p * (K + 1) * D
          ratio    : K = int((mb - p) // p)  |  spec: int((mb - p (1 + D)) // (p (1 + D / q))),
                     inter = p * (min(mrr, K // q) + 1) * D
          rest -= inter / 2^30;  rest -= (K + 1) * p / 2^30
        "ratio_0513" (0.5.13 - 0.5.16): the same joint solve without the padding slot:
          explicit : spec: inter = p * min(mrr, K // q) * D;   mrr: spec: inter = p * K * D
          ratio    : K = int(mb // p)  |  spec: int(mb // (p (1 + D / q))), inter = p * min(mrr, K // q) * D
          rest -= inter / 2^30;  rest -= K * p / 2^30
        "ratio_0508" (0.5.8 - 0.5.12): spec first, in every mode: rest -= p * mrr * D / 2^30;
          ratio: K = int(mb // p);  rest -= K * p / 2^30
        "ratio_0507" (0.5.7): as "ratio_0508", but the spec reserve is only taken in ratio mode and is
          p * R * D (the flag, not divided by dp)
        "ratio_0504" (0.5.4 - 0.5.6): ratio: K = int(mb // p // (1 + D)); rest -= K * p * (1 + D) / 2^30
        "fixed" (0.5.2 - 0.5.3): K = explicit_slots (flag, mrr or 512 // dp); rest -= K * p / 2^30
        kv_budget = int(rest * 2^30)

    K <= 0, K // q <= 0 or kv_budget <= 0: SGLang refuses (:func:`mamba_carve` raises).
    Examples: the :func:`mamba_carve` one (Qwen3-Next-80B TP2, 47,878,147,932 B): "ratio" K = 586, kv_budget =
    25,200,299,868 B; "ratio_0508": K = int(22,679,122,705 / 38,633,472) = 587, kv_budget = 47,878,147,932 -
    587 x 38,633,472 = 25,200,299,868 B (the same bytes, one more slot); "fixed", 512 slots: 47,878,147,932 -
    512 x 38,633,472 = 28,097,810,268 B.
    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache``, v0.5.16 / v0.5.17 / v0.5.23;
    model_executor/model_runner_kv_cache_mixin.py ``handle_max_mamba_cache``, v0.5.7 / v0.5.8 / v0.5.9 / v0.5.13;
    model_executor/model_runner.py ``handle_max_mamba_cache``, v0.5.5, ``profile_max_num_token``, v0.5.3.
    """
    if sizing != "ratio":
        return _old_state_slots(
            mode=mode,
            budget_bytes=budget_bytes,
            p=per_request_bytes,
            r=mamba_full_memory_ratio,
            given=explicit_slots,
            mrr=mrr_per_rank,
            D=draft_tokens,
            sizing=sizing,
            q=slots_per_request,
            mrr_total=mrr_per_rank if mrr_total is None else mrr_total,
        )
    p, q, D = per_request_bytes, slots_per_request, draft_tokens
    rest = budget_bytes / GIB
    inter: Any = 0
    if mode in ("explicit", "fallback"):
        K: Any = explicit_slots
        if D > 0:
            inter = p * (vmin(mrr_per_rank, K // q) + 1) * D
    elif mode == "max-running-requests":
        K = mrr_per_rank
        if D > 0:
            inter = p * (K + 1) * D
    else:
        r = mamba_full_memory_ratio
        mb = rest * r / (1 + r) * GIB
        if D > 0:
            K = vint((mb - p * (1 + D)) // (p * (1 + D / q)))
            inter = p * (vmin(mrr_per_rank, K // q) + 1) * D
        else:
            K = vint((mb - p) // p)
    if D > 0:
        rest = rest - inter / GIB
    rest = rest - (K + 1) * p / GIB
    return K, inter, vint(rest * GIB)


def _old_state_slots(
    *, mode: str, budget_bytes: Any, p: int, r: float, given: Any, mrr: Any, D: int, sizing: str, q: int, mrr_total: Any
) -> tuple[Any, Any, Any]:
    """:func:`mamba_state_slots` of the releases before 0.5.17 (no padding slot; see its formula)."""
    if sizing == "ratio_0513":
        return _joint_0513(mode=mode, budget_bytes=budget_bytes, p=p, r=r, given=given, mrr=mrr, D=D, q=q)
    rest = budget_bytes / GIB
    inter: Any = 0
    if D > 0 and (sizing == "ratio_0508" or (sizing == "ratio_0507" and mode == "ratio")):
        inter = p * (mrr if sizing == "ratio_0508" else mrr_total) * D
        rest = rest - inter / GIB
    K: Any = given
    if mode == "ratio":
        mb = rest * r / (1 + r) * GIB
        K = vint(mb // p // (1 + D)) if sizing == "ratio_0504" else vint(mb // p)
    if sizing == "ratio_0504" and D > 0:
        inter = K * p * D
        rest = rest - inter / GIB
    rest = rest - K * p / GIB
    return K, inter, vint(rest * GIB)


def _joint_0513(
    *, mode: str, budget_bytes: Any, p: int, r: float, given: Any, mrr: Any, D: int, q: int
) -> tuple[Any, Any, Any]:
    """The "ratio_0513" carve (0.5.13 - 0.5.16) of :func:`mamba_state_slots`."""
    rest = budget_bytes / GIB
    inter: Any = 0
    K: Any = given
    if mode == "ratio":
        mb = rest * r / (1 + r) * GIB
        K = vint(mb // (p * (1 + D / q))) if D > 0 else vint(mb // p)
    if D > 0:
        inter = p * (K if mode == "max-running-requests" else vmin(mrr, K // q)) * D
        rest = rest - inter / GIB
    rest = rest - K * p / GIB
    return K, inter, vint(rest * GIB)


def mamba_hybrid_kv_cell(
    *,
    geometry: MambaGeometry,
    attn_tp_size: int,
    kv_dtype: DType,
    stage_layers: tuple[int, int] | None = None,
    dcp_size: int = 1,
) -> int:
    """Per-token KV bytes of a hybrid's *attention* layers in one PP stage (0 if the stage has none).

    GQA attention: :func:`kvplan.engines.sglang.pools.gqa.gqa_bytes_per_token` with ``num_layers`` = the attention
    layers inside the stage (``full_attention_layer_ids``); Kimi-Linear's MLA layers:
    :func:`kvplan.engines.sglang.pools.mla.mla_bytes_per_token`. Tokens are then ``page_floor(kv_budget // cell)``
    (``kvplan.engines.sglang.rules.pool_tokens`` with :attr:`MambaPools.kv_budget_bytes`).

    Examples (bf16): Qwen3-Next TP2 12 x 1 x 512 x 2 = 12,288 B; Nemotron-3-Nano TP1 6 x 2 x 256 x 2 = 6,144 B;
    Qwen3.5-27B TP1 16 x 4 x 512 x 2 = 65,536 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (mambaish ``full_attention_layer_ids`` in the stage), v0.5.23.
    """
    layers = geometry.attention_layers_in(stage_layers)
    if layers == 0:
        return 0
    if geometry.attention_kind == Family.MLA:
        return mla_bytes_per_token(
            kv_lora_rank=geometry.kv_lora_rank,
            qk_rope_head_dim=geometry.qk_rope_head_dim,
            num_layers=layers,
            kv_dtype=kv_dtype,
        )
    return gqa_bytes_per_token(
        num_kv_heads=geometry.num_kv_heads,
        head_dim=geometry.attn_head_dim,
        v_head_dim=geometry.attn_v_head_dim,
        num_layers=layers,
        attn_tp_size=attn_tp_size,
        kv_dtype=kv_dtype,
        dcp_size=dcp_size,
    )


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def attention_tokens(*, rules: Any, kv_budget_bytes: Any, cells: list[int], page_size: int) -> Any:
    """The attention KV pool after the carve: MIN over the PP stages' cells of
    ``rules.pool_tokens(kv_budget, cell, page)`` = ``page_floor(max(kv_budget, 0) // cell)`` (ints or arrays).

    Example: Qwen3-Next TP2, kv_budget 25,200,299,868 B, cell 12,288 B, page 1 -> 2,050,805 tokens.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.calculate_pool_sizes``; mem_cache/kv_cache_configurator.py
    ``_apply_token_constraints`` (MIN over PP ranks), v0.5.23.
    """
    tokens = rules.pool_tokens(budget_bytes=kv_budget_bytes, cell_bytes=cells[0], page_size=page_size)
    for c in cells[1:]:
        tokens = vmin(tokens, rules.pool_tokens(budget_bytes=kv_budget_bytes, cell_bytes=c, page_size=page_size))
    return tokens


def _stage_cells(ctx: PoolContext, geom: MambaGeometry) -> list[int]:
    """The attention cells of the PP stages that hold attention layers ([0] when none does)."""
    stages = ctx.rules.pp_layer_ranges(
        num_layers=geom.num_hidden_layers, pp_size=ctx.pp, partition=ctx.flags.pp_layer_partition
    )
    cells = [
        mamba_hybrid_kv_cell(
            geometry=geom, attn_tp_size=ctx.attn_tp, kv_dtype=ctx.kv_dtype, stage_layers=r if ctx.pp > 1 else None
        )
        for r in stages
    ]
    return [c for c in cells if c] or [0]


def _attention_pool(ctx: PoolContext, geom: MambaGeometry, carve: MambaPools | None, plan: PoolPlan) -> None:
    """The attention layers' KV pool from what the state carve left (MIN over PP stages), into ``plan``."""
    R, f = ctx.rules, ctx.flags
    cells = _stage_cells(ctx, geom)
    plan.cell = max(cells)
    if carve is None or plan.cell == 0:
        return
    tokens = attention_tokens(rules=R, kv_budget_bytes=carve.kv_budget_bytes, cells=cells, page_size=ctx.page_size)
    if f.max_total_tokens is not None and f.max_total_tokens < tokens:
        tokens = R.page_floor(tokens=f.max_total_tokens, page_size=ctx.page_size)
        plan.warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
    plan.tokens = tokens
    # state_bytes already holds the speculative intermediate states (SGLang 0.5.23 budgets and allocates them once:
    # mem_cache/memory_pool.py MambaPool with its speculative intermediate buffers)
    plan.fixed_bytes = carve.state_bytes
    plan.kv_pool_bytes = tokens * int(plan.cell) + plan.fixed_bytes
    plan.pools.append(
        Pool(name="attention KV", tokens=tokens, bytes=tokens * int(plan.cell), bytes_per_token=plan.cell)
    )
    for name, nbytes in carve.components:
        plan.pools.append(
            Pool(
                name=name,
                bytes=nbytes,
                note=f"{carve.mamba_slots + carve.padding_slots} slots x {carve.per_request_bytes:,} B",
            )
        )
    plan.notes.extend(carve.notes)


def _release_numbers(ctx: PoolContext) -> tuple[int, int, int]:
    """The planned release as (major, minor, patch): ``ctx.release`` when given, else the window's first release."""
    return Version.of(str(ctx.release or ctx.rules.release)).triple


def _strategy(ctx: PoolContext) -> str:
    """``--mamba-radix-cache-strategy auto`` resolves to ``no_buffer`` before 0.5.14 (no tracking slots)."""
    return "auto" if _release_numbers(ctx) >= EXTRA_BUFFER_AUTO_SINCE else "no_buffer"


def _radix_cache(ctx: PoolContext, geom: MambaGeometry) -> tuple[bool, str | None]:
    """:func:`release_radix_cache` of the planned release (the user's --disable-radix-cache, then server_args)."""
    f = ctx.flags
    return release_radix_cache(
        release=_release_numbers(ctx),
        radix_cache=f.radix_cache,
        architecture=geom.architecture,
        speculative=bool(f.speculative_algorithm),
        attention_backend=f.attention_backend,
    )


def plan(ctx: PoolContext) -> PoolPlan:
    """The hybrid's pools: :func:`mamba_carve` takes the state slots off the budget, the attention KV pool gets the
    rest (:func:`mamba_hybrid_kv_cell`, MIN over PP stages), and the request cap is bounded by the state slots."""
    f = ctx.flags
    geom = mamba_geometry_from_config(ctx.config)
    cr = CarveRules.of(ctx.rules)
    radix, radix_note = _radix_cache(ctx, geom)
    carve = (
        mamba_carve(
            geometry=geom,
            budget_bytes=max(ctx.budget, 0),
            tp_size=ctx.attn_tp,
            knobs=CarveKnobs(
                mamba_full_memory_ratio=f.mamba_full_memory_ratio,
                max_mamba_cache_size=f.max_mamba_cache_size,
                radix_cache=radix,
                max_running_requests=ctx.max_running_requests,
                attn_dp_size=ctx.attn_dp,
                page_size=ctx.page_size,
                pp_size=ctx.pp,
                speculative_num_draft_tokens=f.speculative_num_draft_tokens,
                overlap_schedule=f.overlap_schedule,
                ssm_dtype=f.mamba_ssm_dtype,
                mamba_radix_cache_strategy=_strategy(ctx),
            ),
            carve=cr,
        )
        if ctx.budget > 0
        else None
    )
    out = PoolPlan(
        tokens=0,
        cell=0,
        layout=f"hybrid linear attention ({len(geom.attention_layers)} attention layers + state)",
        max_running_requests=0,
        reduced=False,
        kv_pool_bytes=0,
        kv_slice_bytes=0,
        fixed_note="linear-attention state slots",
    )
    _attention_pool(ctx, geom, carve, out)
    out.kv_slice_bytes = min(int(out.tokens * out.cell), max(ctx.budget, 0))
    out.max_running_requests, out.reduced = request_cap(ctx, out.tokens)
    if carve is not None and carve.max_running_requests_cap < out.max_running_requests:
        out.max_running_requests = carve.max_running_requests_cap
        out.warnings.append(
            f"max_running_requests capped at {out.max_running_requests} by the state slots "
            f"({carve.mamba_slots} slots / {carve.mamba_ratio} per request)"
        )
    if radix_note is not None:
        out.notes.append(radix_note)
    if cr.sizing != "ratio":
        out.notes.append(f"state carve of SGLang {ctx.release or ctx.rules.release} ({_SIZING_TEXT[cr.sizing]})")
    return out


_SIZING_TEXT = {
    "fixed": "0.5.2 - 0.5.3: radix cache off, --max-mamba-cache-size or --max-running-requests or 512 slots, no "
    "padding slot",
    "ratio_0504": "0.5.4 - 0.5.6: with the radix cache the ratio sets the slots (over --max-mamba-cache-size), "
    "a draft token multiplies the state, no padding slot",
    "ratio_0507": "0.5.7: int(ratio budget // per request) slots, no padding slot; speculative states for "
    "--max-running-requests in ratio mode only",
    "ratio_0508": "0.5.8 - 0.5.12: int(ratio budget // per request) slots, no padding slot; speculative states for "
    "--max-running-requests // dp taken first",
    "ratio_0513": "0.5.13 - 0.5.16: the slots and the speculative states solved together, no padding slot",
}


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s Mamba-hybrid pools over arrays, with :func:`mamba_state_slots` and
    :func:`attention_tokens` (the formulas :func:`plan` calls)::

        K, kv_budget = mamba_state_slots(budget, mrr)          (refused: K <= 0, K // q <= 0, kv_budget <= 0)
        tokens       = attention_tokens(kv_budget)  ->  page_floor(max_total_tokens) where that is smaller
        mrr          = min(resolve_max_running_requests(tokens, ...), K // q)
        budget <= 0  : no carve, 0 tokens, the request cap of 0 tokens

    Example: the :func:`mamba_carve` one (Qwen3-Next-80B TP2): K = 586, at most 117 running requests.
    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache``, ``resolve_max_num_reqs``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    f, R, page = ctx.flags, ctx.rules, ctx.page_size
    cr = CarveRules.of(R)
    try:
        geom = mamba_geometry_from_config(ctx.config)
        p = mamba_state_bytes_per_request(
            geometry=geom, tp_size=ctx.attn_tp, ssm_dtype=f.mamba_ssm_dtype, pp_size=ctx.pp if cr.pp_scaled else 1
        )
        radix = carve_radix_cache(carve=cr, radix_cache=_radix_cache(ctx, geom)[0], architecture=geom.architecture)
        q = mamba_ratio(
            radix_cache=radix,
            overlap_schedule=f.overlap_schedule,
            page_size=page,
            architecture=geom.architecture,
            strategy=_strategy(ctx),
        )
        cells = _stage_cells(ctx, geom)
    except InputError:
        return None
    D = f.speculative_num_draft_tokens if cr.sizing != "fixed" else 0
    mode = mamba_carve_mode(
        max_mamba_cache_size=f.max_mamba_cache_size,
        radix_cache=radix,
        max_running_requests=ctx.max_running_requests,
        carve=cr,
    )
    needs_mrr = D > 0 and spec_needs_mrr(sizing=cr.sizing, mode=mode)
    if (
        p <= 0
        or not f.mamba_full_memory_ratio > 0
        or ctx.attn_dp <= 0
        or max(cells) <= 0
        or cell != max(cells)
        or (needs_mrr and ctx.max_running_requests is None)
    ):
        return None
    old_mrr = mode == "max-running-requests" and cr.sizing != "ratio"  # before 0.5.17 K = the request cap // dp
    dp_div = carve_dp_divisor(carve=cr, attn_dp_size=ctx.attn_dp, architecture=geom.architecture)
    explicit = carve_given_slots(
        carve=cr,
        mode=mode,
        max_mamba_cache_size=f.max_mamba_cache_size,
        max_running_requests=ctx.max_running_requests,
        attn_dp_size=ctx.attn_dp,
        architecture=geom.architecture,
    )

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        mrr_rank = vmax(1, requested // ctx.attn_dp) if requested is not None else 0
        given = requested // dp_div if old_mrr and requested is not None else explicit
        K, _, kv_budget = mamba_state_slots(
            mode=mode,
            budget_bytes=budget,
            per_request_bytes=p,
            slots_per_request=q,
            mamba_full_memory_ratio=float(f.mamba_full_memory_ratio),
            explicit_slots=given,
            mrr_per_rank=mrr_rank,
            draft_tokens=D,
            sizing=cr.sizing,
            mrr_total=requested if requested is not None else 0,
        )
        err = pos & ((K <= 0) | (K // q <= 0) | (kv_budget <= 0))
        tokens = attention_tokens(rules=R, kv_budget_bytes=kv_budget, cells=cells, page_size=page)
        if max_total_tokens is not None:
            capped = R.page_floor(tokens=max_total_tokens, page_size=page)
            tokens = vwhere((max_total_tokens >= 0) & (max_total_tokens < tokens), capped, tokens)
        tokens = vwhere(pos & ~err, tokens, 0)
        mrr = request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested)
        return VectorPools(tokens=tokens, cell=float(max(cells)), mrr=vwhere(pos, vmin(mrr, K // q), mrr), error=err)

    return VectorGroup(family="hybrid_mamba", pools=pools, note=f"{mode} state carve")


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: per TP, the attention layers' bf16 bytes per token and the state bytes per request."""
    g = mamba_geometry_from_config(m.raw_config or m.config)
    out = Breakdown(
        info=dict(attention_layers=len(g.attention_layers), linear_layers=len(g.linear_layers), state_kind=g.kind)
    )
    for tp in SHOW_TPS:
        try:
            kv = mamba_hybrid_kv_cell(geometry=g, attn_tp_size=tp, kv_dtype=DType.BF16)
            state = mamba_state_bytes_per_request(geometry=g, tp_size=tp)
        except InputError:
            continue
        out.rows.append(
            {
                "tp": tp,
                "attention_kv_bytes_per_token_bf16": kv,
                "state_bytes_per_request": state,
                "note": "KV heads split by tp (replicated past the head count); state heads split by tp",
            }
        )
    return out

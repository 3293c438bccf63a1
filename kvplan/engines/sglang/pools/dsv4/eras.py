"""The DeepSeek-V4 configurator of each SGLang release 0.5.12 - 0.5.23 (:data:`DSV4_ERAS`, :func:`dsv4_era`) and the
release check.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import InputError
from kvplan.geometry.records import FrozenRecord

# ----------------------------------------------------------------------------------------------------------
# Releases: what each SGLang release's DSV4PoolConfigurator prices (issue 12; docs/layouts/deepseek-v4.md §7)
# ----------------------------------------------------------------------------------------------------------


@dataclass(init=False, repr=False, eq=False)
class DSV4Era(FrozenRecord):
    """One run of SGLang releases whose ``DSV4PoolConfigurator`` does the same arithmetic on CUDA.

    ``paged`` False: the 0.5.12 - 0.5.20 configurator (:mod:`kvplan.engines.sglang.pools.dsv4_legacy`): one
    coefficient over raw 584 B rows, SWA by ratio only, V4 / V4-Pro only.  True: the 0.5.21+ one
    (:func:`dsv4_pool_sizes`): paged row bytes, SWA cap mode, V4.1 (ratios 1 / 2), ``(L+1)/L`` on the SWA
    coefficient too.
    Sources: ``model_executor/pool_configurator.py`` ``DSV4PoolConfigurator`` of the wheels 0.5.12 - 0.5.23.
    """

    first: str  # the first release of the era
    last: str  # the last release of the era
    paged: bool  # 0.5.21+: the paged-KV configurator (cap mode, V4.1, c2 state)
    pp_slice: bool = True  # 0.5.13+: counts the PP stage's layers (0.5.12: the config's whole list)
    c128_state_fixed: bool = True  # 0.5.15+: c128 state as fixed bytes per request slot (else in the coefficient)
    dspark: bool = True  # 0.5.16+: --speculative-algorithm DSPARK exists
    ring_check: bool = True  # 0.5.18+: _assert_ring_serves_draft_tokens
    swa_pool_check: bool = True  # 0.5.20+: validate_swa_pool_size (window + page >= swa refused)
    trtllm: bool = True  # 0.5.20+: --dsv4-attn-backend trtllm (uniform fp8 rows)
    low_ratio_padding: bool = True  # 0.5.23: _get_low_ratio_kv_padding_bytes; ratio-1/2 rows priced by the layout

    def __init__(
        self,
        first: str,
        last: str,
        paged: bool,
        pp_slice: bool = True,
        c128_state_fixed: bool = True,
        dspark: bool = True,
        ring_check: bool = True,
        swa_pool_check: bool = True,
        trtllm: bool = True,
        low_ratio_padding: bool = True,
    ) -> None:
        self._set(
            first=first,
            last=last,
            paged=paged,
            pp_slice=pp_slice,
            c128_state_fixed=c128_state_fixed,
            dspark=dspark,
            ring_check=ring_check,
            swa_pool_check=swa_pool_check,
            trtllm=trtllm,
            low_ratio_padding=low_ratio_padding,
        )

    @property
    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first} - {self.last}"


#: The DSV4 configurator eras, oldest first (each release from ``first`` to ``last``; ``.postN`` builds go with
#: their base release).  Read in the wheels: 0.5.12 -> 0.5.13 slices the stage; 0.5.15 moves the c128 state to
#: fixed bytes; 0.5.16 adds DSpark; 0.5.18 the ring check; 0.5.20 the SWA floor and trtllm (and, on HIP only, the
#: unified pool); 0.5.21 the paged configurator; 0.5.23 the low-ratio padding.
DSV4_ERAS: tuple[DSV4Era, ...] = (
    DSV4Era(
        "0.5.12",
        "0.5.12",
        paged=False,
        pp_slice=False,
        c128_state_fixed=False,
        dspark=False,
        ring_check=False,
        swa_pool_check=False,
        trtllm=False,
    ),
    DSV4Era(
        "0.5.13",
        "0.5.14",
        paged=False,
        c128_state_fixed=False,
        dspark=False,
        ring_check=False,
        swa_pool_check=False,
        trtllm=False,
    ),
    DSV4Era("0.5.15", "0.5.15", paged=False, dspark=False, ring_check=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.16", "0.5.17", paged=False, ring_check=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.18", "0.5.19", paged=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.20", "0.5.20", paged=False),
    DSV4Era("0.5.21", "0.5.22", paged=True, low_ratio_padding=False),
    DSV4Era("0.5.23", "0.5.23", paged=True),
)
#: the first release that runs DeepSeek-V4.1 (``model_type == "deepseek_v41"``, compress ratios 1 and 2)
DSV41_FIRST_RELEASE = "0.5.21"


def refuse_v41_pipeline(*, is_v41: bool, pp_size: int, release: str | None) -> None:
    """InputError when DeepSeek-V4.1 is asked to run with pipeline parallelism (``pp_size > 1``) on a release that
    serves V4.1: the one place kvplan writes this refusal (``plan_sglang``'s prologue calls it before the
    speculative rules, as SGLang's model hook runs before its speculative hook).

    Releases before :data:`DSV41_FIRST_RELEASE` have no V4.1 at all; :func:`check_dsv4_release` refuses those, so
    this returns for them.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/deepseek_v4_hook.py ``validate_deepseek_v41_features``
    (the ``unsupported`` list: ``("pipeline parallelism", cfg.pp_size > 1)``), v0.5.23 wheel.

    Example: ``is_v41=True, pp_size=2, release=None`` -> InputError naming ``--pp-size``; ``pp_size=1`` or
    ``is_v41=False`` -> None.
    """
    if v41_pipeline_refused(is_v41=is_v41, pp_size=pp_size, release=release):
        raise InputError(V41_PIPELINE_REFUSAL, field="--pp-size", hint="use --pp-size 1")


def v41_pipeline_refused(*, is_v41: bool, pp_size: int, release: str | None) -> bool:
    """Whether :func:`refuse_v41_pipeline` refuses (the sweep asks it to leave such a group to ``fit``, which
    raises): V4.1, ``pp_size > 1``, a release that serves V4.1.  Example: (True, 2, None) -> True; (True, 2,
    "0.5.15") -> False (no V4.1 there: the release check refuses instead)."""
    return is_v41 and pp_size > 1 and dsv4_era(release).paged


#: the refusal text of :func:`refuse_v41_pipeline`
V41_PIPELINE_REFUSAL = "DeepSeek-V4.1 does not support pipeline parallelism yet (SGLang)"


def dsv4_era(release: str | None) -> DSV4Era:
    """The era of SGLang ``release`` (a release string as ``--engine-version`` resolves it; None = the newest).

    Example: ``"0.5.14"`` -> the 0.5.13 - 0.5.14 era; ``"0.5.22"`` -> 0.5.21 - 0.5.22; None -> 0.5.23.
    InputError for a release before 0.5.12 (no DeepSeek-V4 pool).
    """
    if release is None:
        return DSV4_ERAS[-1]
    from kvplan.version import Version

    key = Version.of(release)
    found = [e for e in DSV4_ERAS if Version.of(e.first) <= key]
    if not found:
        raise InputError(
            f"SGLang {release} has no DeepSeek-V4 pool (the first release with it is {DSV4_ERAS[0].first})",
            field="--engine-version",
            hint=f"use --engine-version {DSV4_ERAS[0].first} or newer",
        )
    return found[-1]


def check_dsv4_release(
    *, era: DSV4Era, is_v41: bool, layout: str, speculative_algorithm: str = "", release: str | None = None
) -> None:
    """InputError when the release of ``era`` cannot run this model / flag combination (names the first release
    that can): V4.1 before 0.5.21, DSpark before 0.5.16, the trtllm backend before 0.5.20, the V4.1 row layouts
    before 0.5.21.

    Sources: ``configs/model_config.py`` (no ``deepseek_v41`` before 0.5.21), ``mem_cache/deepseek_v4_memory_pool.py
    get_compress_state_ring_size`` (asserts ratio 4 or 128 up to 0.5.20), ``arg_groups/deepseek_v4_hook.py``
    (EAGLE only in 0.5.12 - 0.5.15), wheels 0.5.12 - 0.5.23.  ``release`` names the release in the message (None:
    the era's releases).
    """
    name = release or era.label
    if is_v41 and not era.paged:
        raise InputError(
            f"SGLang {name} has no DeepSeek-V4.1 (the first release with it is {DSV41_FIRST_RELEASE})",
            field="--engine-version",
            hint=f"use --engine-version {DSV41_FIRST_RELEASE} or newer for this model",
        )
    if speculative_algorithm.upper() == "DSPARK" and not era.dspark:
        raise InputError(
            f"SGLang {name} has no DSPARK speculative decoding (the first release with it is 0.5.16)",
            field="--speculative-algorithm",
            hint="use --engine-version 0.5.16 or newer, or EAGLE",
        )
    if layout == "uniform_fp8" and not era.trtllm:
        raise InputError(
            f"SGLang {name} has no --dsv4-attn-backend trtllm (the first release with it is 0.5.20)",
            field="attention_backend",
            hint="use --engine-version 0.5.20 or newer",
        )
    if layout not in ("v4", "uniform_fp8") and not era.paged:
        raise InputError(
            f"SGLang {name} stores DeepSeek-V4 rows only in the V4 layout (584 B); the {layout} "
            f"layout is first in {DSV41_FIRST_RELEASE}",
            field="kv_layout_env",
        )

"""SGLang's KV-cache dtype rule: what ``--kv-cache-dtype auto`` (or a given value) becomes for each family.

Sources (sgl-project/sglang, v0.5.23):

* ``auto`` and the torch dtype: ``python/sglang/srt/mem_cache/kv_cache_dtype.py`` ``configure_kv_cache_dtype``;
* model overrides of ``auto``: ``python/sglang/srt/arg_groups/overrides.py``
  ``_dsa_kv_cache_dtype_default`` (DSA) and ``_deepseek_v4_kv_cache_dtype`` (DeepSeek-V4);
* CLI choices (the spellings, kept engine-neutral in :mod:`kvplan.geometry.kvdtype`):
  ``python/sglang/srt/arg_groups/fields/model.py`` field ``kv_cache_dtype``;
* the FP4 recipes (``nvfp4``, ``fp4_mx_block16``: :func:`fp4_kv_access`, :func:`fp4_kv_bytes_per_token`,
  :func:`fp4_latent_bytes_per_token`): ``python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py``,
  ``python/sglang/srt/arg_groups/kv_cache_hook.py``, ``python/sglang/srt/layers/attention/attention_registry.py``.

SGLang 0.5.23's FP4 KV recipes, as the engine allocates them (per token, per layer, per KV head of ``hd`` values):

==================  ============================================  ==========================================
recipe              stored                                        runs (else refused at start-up)
==================  ============================================  ==========================================
``nvfp4``           K and V ``hd/2`` B of E2M1 each + one FP8     CUDA SM100 / SM120; decode always
                    E4M3 scale per 16 values (``hd/16`` B each)   ``trtllm_mha`` (so never on an MLA model);
                    in 1 or 2 scale layouts, + an FP8 dequant     prefill ``trtllm_mha`` (SM100 default) or
                    workspace ``hd`` B each (not per layer) with  FlashInfer over an FP8 workspace (SM120
                    FlashInfer prefill; fp32 global scales per    default); native scales need ``hd % 64 == 0``
                    layer (not per token)
``fp4_mx_block16``  K and V ``hd/2`` B + one uint8 exponent       CUDA; MHA backends triton / torch_native /
                    scale per 16 values (``n*hd/16`` B each)      flex_attention / trtllm_mha (fa4 prefill);
                                                                  MLA: flashinfer (trtllm_mla refuses FP4)
MLA latent (both)   ``dim/2`` B + ``dim/16`` scale B per layer    see above: in practice fp4_mx_block16 with
                                                                  the flashinfer MLA backend
==================  ============================================  ==========================================

``mxfp4`` (OCP MX, block 32) and ``fp4`` / ``fp4_e2m1`` are not ``--kv-cache-dtype`` values (argparse refuses them;
``resolve_kv_cache_quant`` says mxfp4 is reserved for a block-32 recipe).
"""

from __future__ import annotations

from collections.abc import Callable

from kvplan.engines.backends import AttentionBackend
from kvplan.engines.sglang.platform import platform_of
from kvplan.errors import EngineRefusal, InputError
from kvplan.family import ATTENTION_FAMILIES, Family
from kvplan.geometry.kvdtype import (
    FP4_KV_DTYPES,
    KV_CACHE_DTYPES,
    canonical_kv_dtype,
    canonical_model_dtype,
    fp4_block_scale_bytes,
    kv_packed_bytes,
)
from kvplan.hfconfig.detect import attention_family
from kvplan.hfconfig.dtypes import DType, dtype_named, dtype_of

__all__ = [
    "KV_CACHE_DTYPES",
    "attention_family",
    "canonical_kv_dtype",
    "check_release_kv_dtype",
    "fp4_kv_access",
    "fp4_kv_bytes_per_token",
    "fp4_latent_bytes_per_token",
    "kv_dtype_choices",
    "resolve_kv_cache_dtype",
]

#: ``kv_cache_quant_algo`` values (a quantization config's KV scheme name, e.g. ModelOpt's ``"FP8"``, compared
#: upper-cased) that turn ``auto`` into an e4m3 KV cache: SGLang v0.5.23 ``mem_cache/kv_cache_dtype.py``
#: ``configure_kv_cache_dtype`` (a config value, not a dtype spelling)
_FP8_KV_QUANT_ALGOS = ("FP8",)
#: DeepSeek-V4's ``--kv-cache-dtype`` words, as spelled (trimmed, lower-cased): SGLang v0.5.23
#: ``arg_groups/overrides.py`` ``_deepseek_v4_kv_cache_dtype`` maps ``auto`` to ``fp8_e4m3`` and asserts the value is
#: in ``["fp8_e4m3", "bfloat16"]`` -- the words, not their members: ``bf16`` / ``fp8`` are refused there
_DSV4_FP8_WORDS = ("auto", "fp8_e4m3")
_DSV4_BF16_WORDS = ("bfloat16",)


class _Request:
    """One ``--kv-cache-dtype`` request and the facts SGLang's resolution reads (a plain record: no generated code)."""

    __slots__ = ("kv_cache_quant_algo", "learnable_sink", "model_dtype", "plat", "raw", "req", "sm_major")
    raw: str  # the value as given (DeepSeek-V4 checks the spelling)
    req: DType | None  # the requested dtype, resolved once (None: auto)
    model_dtype: DType  # BF16 | FP16 | FP32
    kv_cache_quant_algo: str | None
    sm_major: int | None
    plat: str
    learnable_sink: bool

    def __init__(
        self,
        *,
        raw: str,
        req: DType | None,
        model_dtype: DType,
        kv_cache_quant_algo: str | None,
        sm_major: int | None,
        plat: str,
        learnable_sink: bool,
    ) -> None:
        self.raw, self.req, self.model_dtype, self.kv_cache_quant_algo = raw, req, model_dtype, kv_cache_quant_algo
        self.sm_major, self.plat, self.learnable_sink = sm_major, plat, learnable_sink


def _configure_kv_cache_dtype(r: _Request) -> str:
    """``configure_kv_cache_dtype``: ``auto`` -> e4m3 for an FP8 ``kv_cache_quant_algo``, else the model dtype."""
    if r.req is None:
        if isinstance(r.kv_cache_quant_algo, str) and r.kv_cache_quant_algo.upper() in _FP8_KV_QUANT_ALGOS:
            return DType.FP8_E4M3.canonical
        return r.model_dtype.canonical
    if r.req is DType.FP8_E5M2 and r.plat == "cpu":
        raise InputError(
            "fp8_e5m2 KV cache is not supported on CPU", field="--kv-cache-dtype", hint="use fp8_e4m3 or auto"
        )
    return r.req.canonical


def _dsa(r: _Request) -> str:
    """``_dsa_kv_cache_dtype_default`` on CUDA/ROCm (fp8 from SM major 10), bf16 for ``auto`` on XPU."""
    if r.plat == "xpu" and r.req is None:
        return DType.BF16.canonical
    if r.plat not in ("cuda", "hip"):
        return _configure_kv_cache_dtype(r)
    if r.learnable_sink and r.req not in (None, DType.BF16):
        raise InputError(
            f"learnable DSA attention sinks need a bf16 KV cache, got {r.raw!r}",
            field="--kv-cache-dtype",
            hint="use auto or bfloat16",
        )
    req = r.req
    if req is None:
        major = r.sm_major if r.sm_major is not None else (9 if r.plat == "hip" else 0)
        req = DType.FP8_E4M3 if (major >= 10 and not r.learnable_sink) else DType.BF16
    if req not in (DType.BF16, DType.FP8_E4M3):
        raise InputError(
            f"DeepSeek DSA models support only bf16/bfloat16 or fp8_e4m3, got {r.raw!r}",
            field="--kv-cache-dtype",
            hint="use auto, bfloat16 or fp8_e4m3",
        )
    return req.canonical


def _dsv4(r: _Request) -> str:
    """``_deepseek_v4_kv_cache_dtype``: ``auto`` -> fp8_e4m3; only fp8_e4m3 / ``bfloat16``; NPU forced bf16."""
    if r.plat == "npu":
        return DType.BF16.canonical
    raw = r.raw.strip().lower()  # the spelling itself: SGLang's assert lists "bfloat16", not "bf16"
    if raw in _DSV4_FP8_WORDS:
        return DType.FP8_E4M3.canonical
    if raw in _DSV4_BF16_WORDS:
        return DType.BF16.canonical
    raise InputError(
        f"DeepSeek-V4 supports only fp8_e4m3 or bfloat16, got {r.raw!r}",
        field="--kv-cache-dtype",
        hint="use auto, fp8_e4m3 or bfloat16 (SGLang rejects the 'bf16' spelling here)",
    )


def _mla(r: _Request) -> str:
    """MLA layers (``use_mla_backend``): ``nvfp4`` is refused -- it forces the ``trtllm_mha`` decode backend
    (``handle_nvfp4_prefill_kv_dequant_dtype`` refuses any other), and ``create_trtllm_mha_backend`` raises for MLA
    models; the rest as ``configure_kv_cache_dtype``."""
    if r.req is DType.NVFP4:
        raise EngineRefusal(
            "--kv-cache-dtype nvfp4 is refused on an MLA model: SGLang's NVFP4 recipe decodes with trtllm_mha, "
            "which 'can only be used with non-MLA models'",
            field="--kv-cache-dtype",
            hint="use fp4_mx_block16 (with --attention-backend flashinfer), fp8_e4m3 or auto",
        )
    return _configure_kv_cache_dtype(r)


#: the model-override pass of each attention family (the others go straight to configure_kv_cache_dtype)
_OVERRIDES: dict[Family, Callable[[_Request], str]] = {Family.DSA: _dsa, Family.DSV4: _dsv4, Family.MLA: _mla}


def _attention(family: str) -> Family:
    try:
        fam = Family(family)
    except ValueError:
        fam = None
    if fam not in ATTENTION_FAMILIES:
        raise InputError(
            f"unknown attention family {family!r}", field="family", hint="one of " + ", ".join(ATTENTION_FAMILIES)
        )
    assert fam is not None
    return fam


def served_model_dtype(*, config_dtype: str, model_type: str) -> str:
    """The dtype SGLang serves a model in under ``--dtype auto`` (the default): the config's dtype, except that a
    float32 checkpoint is downcast to float16, and a Gemma one (``model_type`` starting ``gemma``) to bfloat16.
    The KV pool's ``auto`` dtype follows it.

    Example: ``served_model_dtype(config_dtype="fp32", model_type="granite") == "fp16"``;
    ``served_model_dtype(config_dtype="fp32", model_type="gemma2") == "bf16"``; ``"bf16"`` stays ``"bf16"``.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``_get_and_verify_dtype`` (v0.5.23; the
    same rule since it was adapted from vLLM v0.6.4.post1).
    """
    if config_dtype != DType.FP32.canonical:
        return config_dtype
    return DType.BF16.canonical if model_type.startswith("gemma") else DType.FP16.canonical


def resolve_kv_cache_dtype(
    *,
    requested: str,
    model_dtype: str,
    kv_cache_quant_algo: str | None,
    family: str,
    sm_major: int | None,
    vendor: str,
    learnable_sink: bool = False,
) -> str:
    """The dtype SGLang 0.5.23 actually stores the KV pool in.

    Rules, in the order the engine applies them:

    1. ``family == "dsa"`` (DeepSeek-V3.2, GLM-5, ... on CUDA/ROCm): the server-args pass
       ``_dsa_kv_cache_dtype_default`` rewrites ``auto`` to ``fp8_e4m3`` when the device's
       compute-capability major is >= 10 (and the model has no learnable attention sink),
       else to ``bfloat16``; ``bf16`` is spelt ``bfloat16``; anything but bf16/fp8_e4m3 is
       refused. On ROCm ``torch.cuda.get_device_capability()`` reports the gfx major (9 on
       MI300/MI355), so ``auto`` is bf16 there. On XPU ``auto`` -> bf16; on NPU no override.
    2. ``family == "dsv4"``: ``_deepseek_v4_kv_cache_dtype`` rewrites ``auto`` to
       ``fp8_e4m3``; NPU is forced to ``bfloat16``; only fp8_e4m3/bfloat16 are allowed
       (``bf16`` is *not*: the assert lists ``"bfloat16"`` only).
       ``family == "mla"``: ``nvfp4`` is refused (its decode backend, trtllm_mha, refuses MLA models).
    3. ``configure_kv_cache_dtype``: ``auto`` -> e4m3 if the checkpoint's quant config has
       ``kv_cache_quant_algo == "FP8"`` (case-insensitive), else the model dtype.
       ``fp8_e5m2`` is refused on CPU.

    ``family`` is an attention family (:data:`kvplan.family.ATTENTION_FAMILIES`; hybrids pass
    :func:`attention_family`).

    Example: DeepSeek-V3.2 (bf16 weights), ``auto``: SM100 -> ``"fp8_e4m3"``,
    SM90 -> ``"bf16"``; Llama-3.1-8B ``auto`` -> ``"bf16"``; a ModelOpt FP8 checkpoint with
    ``kv_cache_quant_algo="FP8"`` and ``auto`` -> ``"fp8_e4m3"``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/overrides.py
    ``_dsa_kv_cache_dtype_default``, ``_deepseek_v4_kv_cache_dtype``;
    python/sglang/srt/mem_cache/kv_cache_dtype.py ``configure_kv_cache_dtype``, v0.5.23.
    """
    fam = _attention(family)
    r = _Request(
        raw=requested,
        req=dtype_of(canonical_kv_dtype(requested)),
        model_dtype=dtype_named(canonical_model_dtype(model_dtype)),
        kv_cache_quant_algo=kv_cache_quant_algo,
        sm_major=sm_major,
        plat=platform_of(vendor),
        learnable_sink=learnable_sink,
    )
    return _OVERRIDES.get(fam, _configure_kv_cache_dtype)(r)


# ------------------------------------------------------------------------------------------------ choices by release

#: ``--kv-cache-dtype`` argparse ``choices`` by release: (first release, values added, values removed), read in the
#: wheels (server_args.py ``ServerArgs.add_cli_args`` to 0.5.13; the ``kv_cache_dtype`` field's ``choices`` in
#: server_args.py 0.5.14 - 0.5.19 and arg_groups/fields/model.py 0.5.20+).  0.4.1 has no fp8_e4m3, 0.4.1.post7 has it
#: (0.4.1.post1 - post6 not read: kvplan's 0.4.1.post7 window starts there)
KV_DTYPE_CHOICES_BY_RELEASE: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("0.3.0", ("auto", "fp8_e5m2"), ()),
    ("0.4.1.post7", ("fp8_e4m3",), ()),
    ("0.5.4", ("bf16", "bfloat16"), ()),
    ("0.5.5", ("fp4_e2m1",), ()),
    ("0.5.16", ("mxfp8", "nvfp4", "fp4_mx_block16"), ()),
    ("0.5.21", (), ("fp4_e2m1",)),
)

#: choices a release accepts that kvplan does not price (InputError naming the reason, not the choices)
_UNPRICED_KV_DTYPES = {
    "fp4_e2m1": "SGLang {release}'s fp4_e2m1 KV pool (float4_e2m1fn_x2 with a scale buffer per "
    "16 values) is not modelled by kvplan"
}


def kv_dtype_choices(release: str) -> tuple[str, ...]:
    """The ``--kv-cache-dtype`` values SGLang release ``release`` accepts (its argparse ``choices``, in kvplan's
    order).  Example: ``kv_dtype_choices("0.5.12")`` -> auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1 (no mxfp8,
    nvfp4 or fp4_mx_block16); ``"0.5.3"`` -> auto, fp8_e5m2, fp8_e4m3; ``"0.5.23"`` -> 0.5.23's eight values.

    Source: sgl-project/sglang python/sglang/srt/server_args.py (``--kv-cache-dtype`` ``choices``), v0.3.0 - v0.5.19;
    python/sglang/srt/arg_groups/fields/model.py (``kv_cache_dtype`` ``choices``), v0.5.20 - v0.5.23.
    """
    from kvplan.version import Version

    key = Version.of(release)
    out: list[str] = []
    for first, added, removed in KV_DTYPE_CHOICES_BY_RELEASE:
        if Version.of(first) <= key:
            out = [v for v in out if v not in removed] + list(added)
    return tuple(out)


def check_release_kv_dtype(*, requested: str, release: str | None) -> None:
    """InputError (``--kv-cache-dtype``, exit 2) when SGLang release ``release`` (None: the newest, which kvplan's
    spellings are) has no such ``--kv-cache-dtype`` choice -- the message names the release's choices -- or accepts
    one kvplan does not price (``fp4_e2m1``, 0.5.5 - 0.5.20).

    Examples: ``mxfp8`` under 0.5.15 -> InputError listing auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1;
    ``bf16`` under 0.5.3 -> InputError (auto, fp8_e5m2, fp8_e4m3); ``nvfp4`` under 0.5.16 -> no error.

    Source: see :func:`kv_dtype_choices`.
    """
    if release is None:
        return
    value = (requested or "auto").strip().lower()
    choices = kv_dtype_choices(release)
    if value not in choices:
        raise InputError(
            f"SGLang {release} has no --kv-cache-dtype {requested!r}",
            field="--kv-cache-dtype",
            hint=f"SGLang {release} accepts: {', '.join(choices)}",
        )
    if value in _UNPRICED_KV_DTYPES:
        raise InputError(
            _UNPRICED_KV_DTYPES[value].format(release=release),
            field="--kv-cache-dtype",
            hint="use one of " + ", ".join(c for c in choices if c not in _UNPRICED_KV_DTYPES),
        )


# ------------------------------------------------------------------------------------------------ FP4 recipes


def _fp4(kv_dtype: str) -> str:
    dt = canonical_kv_dtype(kv_dtype)
    if dt not in FP4_KV_DTYPES:
        raise InputError(
            f"{kv_dtype!r} is not an FP4 KV recipe", field="--kv-cache-dtype", hint="one of " + ", ".join(FP4_KV_DTYPES)
        )
    return dt


def fp4_kv_access(
    *,
    kv_dtype: str,
    sm_major: int | None,
    prefill_backend: AttentionBackend | None = None,
    decode_backend: AttentionBackend | None = None,
) -> tuple[int, bool]:
    """``(scale_layouts, dequant_workspace)`` of an FP4 MHA/GQA pool.

    ``fp4_mx_block16``: one token-linear scale layout, no workspace (its backends read FP4 + scales directly).
    ``nvfp4``: prefill defaults to ``trtllm_mha`` on SM100 (native FP4) else FlashInfer over an FP8 dequant workspace;
    decode is ``trtllm_mha``.  A token-linear scale buffer exists with the workspace or with native access off SM100;
    the TRT-LLM native (HND) scale layout only on SM100 -- so SM100 defaults ``(1, False)``, SM120 defaults
    ``(1, True)``, SM100 with FlashInfer prefill ``(2, True)``.

    Source: sgl-project/sglang python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py
    ``NVFP4KVCacheMethod.needs_linear_scale_buffer`` / ``needs_native_fp4_scales``,
    ``KV_CACHE_ATTENTION_ACCESS_REGISTRY``;
    python/sglang/srt/arg_groups/kv_cache_hook.py ``handle_nvfp4_prefill_kv_dequant_dtype``, v0.5.23.
    """
    if dtype_of(_fp4(kv_dtype)) is DType.FP4_MX_BLOCK16:
        return 1, False
    sm100 = sm_major == 10
    prefill = prefill_backend or (AttentionBackend.TRTLLM_MHA if sm100 else AttentionBackend.FLASHINFER)
    decode = decode_backend or AttentionBackend.TRTLLM_MHA
    if decode != AttentionBackend.TRTLLM_MHA:
        raise InputError(
            f"NVFP4 decode requires --decode-attention-backend=trtllm_mha, got {str(decode)!r}",
            field="--decode-attention-backend",
        )
    if prefill not in (AttentionBackend.TRTLLM_MHA, AttentionBackend.FLASHINFER):
        raise InputError(
            f"NVFP4 prefill reads native FP4 (trtllm_mha) or an FP8 workspace (flashinfer), not {str(prefill)!r}",
            field="--prefill-attention-backend",
        )
    dequant = prefill == AttentionBackend.FLASHINFER
    native_layout = sm100  # decode is trtllm_mha: native access always
    linear = dequant or not sm100
    return int(linear) + int(native_layout), dequant


def fp4_kv_bytes_per_token(
    *,
    kv_dtype: str,
    kv_heads_per_rank: int,
    head_dim: int,
    num_layers: int,
    sm_major: int | None = None,
    prefill_backend: AttentionBackend | None = None,
    decode_backend: AttentionBackend | None = None,
) -> int:
    """Bytes one token costs in an FP4 MHA/GQA pool on one attention rank (``n`` KV heads, ``L`` layers).

    Formula (K and V both sized with ``head_dim``, as the recipes do)::

        fp4     = n * (hd // 2) * L * 2
        scales  = layouts * n * (hd // 16) * L * 2        (fp4_mx_block16: (n * hd // 16) * L * 2, one layout)
        dq      = n * hd * 2 * 1                          (nvfp4 FP8 workspace, shared by the layers)

    Worked examples (Llama-3.1-8B, n 8, hd 128, L 32): nvfp4 SM100 defaults 32,768 + 4,096 = 36,864; SM120
    36,864 + 2,048 = 38,912; SM100 with FlashInfer prefill 32,768 + 8,192 + 2,048 = 43,008; fp4_mx_block16 36,864.
    NVFP4 with native (SM100) scales needs ``hd % 64 == 0`` (``create_buffers`` raises otherwise).

    Source: sgl-project/sglang python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py
    ``NVFP4KVCacheMethod.compute_cell_size`` / ``create_buffers``, ``FP4MXBlock16KVCacheMethod.compute_cell_size``;
    python/sglang/srt/model_executor/pool_configurator.py ``DefaultPoolConfigurator._compute_cell_size``, v0.5.23.
    """
    dt = _fp4(kv_dtype)
    layouts, dequant = fp4_kv_access(
        kv_dtype=dt, sm_major=sm_major, prefill_backend=prefill_backend, decode_backend=decode_backend
    )
    n, hd, L = kv_heads_per_rank, head_dim, num_layers
    if dtype_of(dt) is DType.NVFP4 and sm_major == 10 and hd % 64:
        raise InputError(
            f"native NVFP4 (SM100) needs head_dim divisible by 64, got {hd}",
            field="--kv-cache-dtype",
            hint="use fp4_mx_block16 or fp8_e4m3",
        )
    values = n * hd * L * 2
    if dtype_of(dt) is DType.FP4_MX_BLOCK16:
        scales = fp4_block_scale_bytes(values=n * hd) * L * 2
    else:
        scales = layouts * n * fp4_block_scale_bytes(values=hd) * L * 2
    dq = n * hd * 2 if dequant else 0
    return kv_packed_bytes(values=values, dtype=dt) + scales + dq


def fp4_latent_bytes_per_token(*, kv_dim: int, num_layers: int) -> int:
    """Bytes one token costs in an FP4 MLA latent pool (both recipes): ``(dim * L) // 2 + (dim // 16) * L``.

    Example: DeepSeek-V3 (512 + 64 = 576, 61 layers): 17,568 + 36 x 61 = 19,764.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size`` (``is_float4_e2m1fn_x2`` branch); python/sglang/srt/mem_cache/
    memory_pool.py ``MLATokenToKVPool`` (``kv_buffer`` ``k // 2``, ``kv_scale_buffer`` ``k // 16``), v0.5.23.
    """
    packed = kv_packed_bytes(values=kv_dim * num_layers, dtype=DType.NVFP4.canonical)
    return packed + fp4_block_scale_bytes(values=kv_dim) * num_layers

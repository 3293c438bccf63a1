"""What each engine refuses at start-up, engine by engine: the KV dtypes it runs on a GPU, the context it accepts.

kvplan prices a deployment whatever it is told; these rules say when the engine would stop before serving, so the
planning layer (:mod:`kvplan.planning.verdict`) can make ``fits`` false with the engine's own reason.  Every rule
names the engine source it was read from; a rule that cannot be decided (no GPU preset, an unknown compute
capability) answers ``None`` ("not refused") and says so in :func:`unchecked_note`.

KV dtypes (the *resolved* dtype: ``auto`` already applied):

===============  ====================================================  ==============================================
engine, dtype    runs on                                               source
===============  ====================================================  ==============================================
SGLang mxfp8     NVIDIA SM10x-SM12x (``is_blackwell``)                 arg_groups/kv_cache_hook.py
                                                                       ``handle_mxfp8_kv_cache_compatibility``
SGLang nvfp4     NVIDIA SM100 or SM120 (``is_sm100`` / ``is_sm120``)    ``handle_kv4_compatibility``
SGLang           CUDA, attention backend triton / torch_native /        ``handle_kv4_compatibility`` (the backend
fp4_mx_block16   flex_attention / trtllm_mha (MHA layers) or            lists); the default backend: engines.sglang
                 flashinfer / trtllm_mla (MLA layers)                   .rules ``default_attention_backend``
SGLang fp8       every GPU (no start-up check in 0.5.23)               arg_groups/kv_cache_hook.py, overrides.py
vLLM fp8,        MHA/GQA: SM80+ (FLASHINFER, SM 8.0-12.1, stores       platforms/cuda.py ``_get_backend_priorities``;
fp8_e4m3,        all three; TRITON_ATTN needs SM89+); MLA: fp8 /       v1/attention/backends/flashinfer.py,
fp8_e5m2         fp8_e4m3 on SM89+ (below SM9 the only MLA backend is  triton_attn.py, mla/triton_mla.py
                 TRITON_MLA: "native FP8 (fp8e4nv) requires SM89+"),   ``TritonMLAImpl.__init__``; no MLA backend lists
                 fp8_e5m2 on none                                      fp8_e5m2 (``supported_kv_cache_dtypes``)
vLLM fp8_inc     Intel Gaudi only (no CUDA backend lists it)           ``supported_kv_cache_dtypes`` of every backend
===============  ====================================================  ==============================================

(SGLang 0.5.23 wheel, python/sglang/srt/...; vLLM 0.34.0 wheel, vllm/...)  SGLang's fp8 on Ampere: no server-args
check refuses it (FlashInfer / Triton run it), so kvplan does not.  vLLM fp8 on Ampere: MHA/GQA runs (FlashInfer),
MLA does not (A100 / A10 / RTX 3090 are SM80-86).  The DSA and DeepSeek-V4 layouts refuse other dtypes through their
own dtype rules (an input error, :mod:`kvplan.engines.sglang.kvdtype`).

Context: SGLang refuses ``--context-length`` above the model's derived context length unless
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is true (configs/model_config.py ``ModelConfig._derive_context_length``,
0.5.23); vLLM refuses ``--max-model-len`` above its derived maximum unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is 1 /
true (vllm/config/model.py ``_get_and_verify_max_len``, 0.34.0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvplan.engines.backends import AttentionBackend
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.dtypes import DType, dtype_of

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset

SGLANG, VLLM = "sglang", "vllm"

#: the environment variable each engine reads to accept a context above the model's maximum
LONG_CONTEXT_ENV: dict[str, str] = {
    SGLANG: "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
    VLLM: "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
}


# ------------------------------------------------------------------------------------------------ the GPU


class Arch:
    """A GPU as the engines' platform checks see it: vendor and compute capability (None when unknown).

    (A plain class with slots, as :class:`KvQuery`: a NamedTuple class is built by generated code at every import,
    on every ``kvplan fit``; nothing indexes, unpacks or compares them.)
    """

    __slots__ = ("major", "minor", "name", "sm", "vendor")

    def __init__(self, *, name: str, vendor: str, major: int | None, minor: int | None, sm: str) -> None:
        self.name = name
        self.vendor = vendor
        self.major = major
        self.minor = minor
        self.sm = sm

    def __repr__(self) -> str:
        return (
            f"Arch(name={self.name!r}, vendor={self.vendor!r}, major={self.major!r}, minor={self.minor!r}, "
            f"sm={self.sm!r})"
        )

    @property
    def cuda(self) -> bool:
        return self.vendor == "nvidia"

    @property
    def label(self) -> str:
        """``NVIDIA H100 80GB HBM3 (SM90)``; ``AMD Instinct MI300X (gfx942)``."""
        if self.cuda and self.major is not None:
            return f"{self.name} (SM{self.major}{self.minor or 0})"
        return f"{self.name} ({self.sm})" if self.sm else self.name


def arch_of(gpu: HardwarePreset | None) -> Arch | None:
    """The :class:`Arch` of a GPU preset (``sm = "9.0"`` -> major 9, minor 0); None without a preset.

    Example: h100-sxm -> ``Arch(major=9, minor=0, vendor="nvidia")``; mi300x -> major None, ``sm = "gfx942"``.
    """
    if gpu is None:
        return None
    major: int | None = None
    minor: int | None = None
    head, _, tail = gpu.sm.partition(".")
    if head.isdigit():
        major = int(head)
        minor = int(tail) if tail.isdigit() else 0
    return Arch(name=gpu.name, vendor=gpu.vendor, major=major, minor=minor, sm=gpu.sm)


# ------------------------------------------------------------------------------------------------ KV dtypes

#: SGLang 0.5.23 ``handle_kv4_compatibility``: the attention backends an FP4 KV cache runs with (``!FA4`` branch)
KV4_MHA_BACKENDS = (
    AttentionBackend.TRITON,
    AttentionBackend.TORCH_NATIVE,
    AttentionBackend.FLEX_ATTENTION,
    AttentionBackend.TRTLLM_MHA,
)
KV4_MLA_BACKENDS = (AttentionBackend.FLASHINFER, AttentionBackend.TRTLLM_MLA)
#: SGLang 0.5.23 ``_mla_kv_cache_dtype_checks`` (arg_groups/overrides.py): the KV dtypes the TensorRT-LLM MLA backend
#: stores; it passes ``handle_kv4_compatibility`` but refuses an FP4 cache a step later
TRTLLM_MLA_KV_DTYPES = ("fp8_e4m3", "bf16", "auto")
#: vLLM's ``--kv-cache-dtype`` words (its vocabulary, kept as spellings: ``fp8_inc`` stores e4m3 too but has its own
#: rule) that the CUDA FP8 rule :func:`_vllm_fp8` answers
_VLLM_FP8 = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2"})


class KvQuery:
    """One KV-dtype question: the resolved dtype, the GPU, the attention kind of the layers and the backend."""

    __slots__ = ("arch", "attention", "attention_backend", "deepseek_family", "kv_dtype")

    def __init__(
        self,
        *,
        kv_dtype: str,
        arch: Arch,
        attention: Family,
        attention_backend: AttentionBackend | None,
        deepseek_family: bool = False,
    ) -> None:
        self.kv_dtype = kv_dtype
        self.deepseek_family = deepseek_family  # SGLang's DeepSeek-family override applies (trtllm_mla on SM100)
        self.arch = arch
        self.attention = attention  # GQA (MHA/GQA layers) or MLA (latent); DSA / DSV4 as themselves
        self.attention_backend = attention_backend  # the user's --attention-backend (None: the engine's default)


def _sglang_mxfp8(q: KvQuery) -> str | None:
    if q.arch.cuda and q.arch.major is not None and 10 <= q.arch.major <= 12:
        return None
    return (
        f"--kv-cache-dtype mxfp8 needs an SM100+ (Blackwell) GPU: SGLang refuses it on {q.arch.label} "
        "(handle_mxfp8_kv_cache_compatibility)"
    )


def _sglang_nvfp4(q: KvQuery) -> str | None:
    if not q.arch.cuda:
        return f"FP4 KV caches run on CUDA only: SGLang refuses nvfp4 on {q.arch.label}"
    if q.arch.major in (10, 12):
        return None
    return f"--kv-cache-dtype nvfp4 needs Blackwell SM100 or SM120: SGLang refuses it on {q.arch.label}"


def _sglang_fp4_mx(q: KvQuery) -> str | None:
    if not q.arch.cuda:
        return f"FP4 KV caches run on CUDA only: SGLang refuses fp4_mx_block16 on {q.arch.label}"
    from kvplan.engines.sglang.rules import default_attention_backend

    backend = q.attention_backend or default_attention_backend(
        family=q.attention, sm_major=q.arch.major, vendor=q.arch.vendor, deepseek_family=q.deepseek_family
    )
    allowed = KV4_MLA_BACKENDS if q.attention == Family.MLA else KV4_MHA_BACKENDS
    how = "given" if q.attention_backend else f"SGLang's default on {q.arch.label}"
    if backend == AttentionBackend.TRTLLM_MLA and q.kv_dtype not in TRTLLM_MLA_KV_DTYPES:
        return (
            f"--kv-cache-dtype {q.kv_dtype}: the TensorRT-LLM MLA backend ({how}) stores only "
            f"{' / '.join(TRTLLM_MLA_KV_DTYPES)}, so SGLang refuses it (_mla_kv_cache_dtype_checks); "
            f"--attention-backend flashinfer runs an FP4 MLA cache"
        )
    if backend in allowed:
        return None
    return (
        f"--kv-cache-dtype fp4_mx_block16 needs attention backend {' / '.join(allowed)}: SGLang refuses it with "
        f"{backend} ({how})"
    )


def _vllm_fp8(q: KvQuery) -> str | None:
    cap = (q.arch.major or 0, q.arch.minor or 0)
    if q.attention == Family.MLA:
        if dtype_of(q.kv_dtype) is DType.FP8_E5M2:
            return "no vLLM MLA attention backend stores fp8_e5m2: vLLM refuses --kv-cache-dtype fp8_e5m2 here"
        if cap < (8, 9):
            return (
                f"an FP8 MLA cache needs SM89+ in vLLM (TRITON_MLA: native FP8 requires SM89+): vLLM refuses "
                f"--kv-cache-dtype {q.kv_dtype} on {q.arch.label}"
            )
        return None
    if q.attention == Family.GQA and cap < (8, 0):
        return (
            f"an FP8 KV cache needs SM80+ in vLLM (FLASHINFER; TRITON_ATTN needs SM89+): vLLM refuses "
            f"--kv-cache-dtype {q.kv_dtype} on {q.arch.label}"
        )
    return None


def _vllm_fp8_inc(q: KvQuery) -> str | None:
    return f"fp8_inc is Intel Gaudi's KV format: no vLLM CUDA attention backend stores it ({q.arch.label})"


#: engine -> resolved KV dtype -> the rule (a reason when the engine refuses it, None when it runs)
KV_DTYPE_RULES: dict[str, dict[str, Callable[[KvQuery], str | None]]] = {
    SGLANG: {"mxfp8": _sglang_mxfp8, "nvfp4": _sglang_nvfp4, "fp4_mx_block16": _sglang_fp4_mx},
    VLLM: {**dict.fromkeys(_VLLM_FP8, _vllm_fp8), "fp8_inc": _vllm_fp8_inc},
}


def attention_kind(model: ModelSpec) -> Family:
    """The attention kind of a model's layers (hybrids as their attention layers: MLA with a ``kv_lora_rank``)."""
    from kvplan.engines.sglang.kvdtype import attention_family

    return attention_family(family=model.family, config=model.config)


def deepseek_family(model: ModelSpec) -> bool:
    """Whether SGLang's DeepSeek-family model override applies to ``model``
    (:func:`kvplan.engines.sglang.rules.is_deepseek_family` of its architectures)."""
    from kvplan.engines.sglang.rules import is_deepseek_family

    return is_deepseek_family(architectures=(model.raw_config or model.config).get("architectures"))


def resolved_kv_dtype(
    *, engine: str, requested: str | None, result_dtype: str, model: ModelSpec, arch: Arch | None
) -> str:
    """The dtype the engine stores its KV cache in: SGLang's result already holds it; vLLM's ``auto`` follows the
    checkpoint's KV scheme (:func:`kvplan.engines.vllm.specs.resolve_kv_cache_dtype`), else the model dtype."""
    if engine != VLLM:
        return result_dtype
    from kvplan.engines.vllm.specs import resolve_kv_cache_dtype

    kv = resolve_kv_cache_dtype(
        model.raw_config or model.config, requested or "auto", arch.major if arch is not None else None
    )
    return result_dtype if kv == "auto" else kv


def kv_dtype_refusal(
    *,
    engine: str,
    kv_dtype: str,
    arch: Arch | None,
    attention: Family,
    attention_backend: AttentionBackend | None = None,
    deepseek_family: bool = False,
) -> str | None:
    """Why ``engine`` refuses to start with a ``kv_dtype`` KV cache on this GPU, or None (it runs, or it cannot be
    told: no GPU preset, an unknown compute capability -- see :func:`unchecked_note`).

    Examples: SGLang nvfp4 on h100-sxm -> "--kv-cache-dtype nvfp4 needs Blackwell SM100 or SM120: SGLang refuses it
    on NVIDIA H100 80GB HBM3 (SM90)"; SGLang nvfp4 on b200 -> None; vLLM fp8 on a100-sxm-80gb for DeepSeek-V2 (MLA)
    -> "an FP8 MLA cache needs SM89+ in vLLM ..."; vLLM fp8 on a100 for Llama (GQA) -> None.

    Sources: the table in the module docstring.
    """
    rule = KV_DTYPE_RULES.get(engine, {}).get(kv_dtype)
    if rule is None or arch is None or (arch.cuda and arch.major is None):
        return None
    if engine == VLLM and not arch.cuda:
        return None  # vLLM's ROCm / XPU / HPU backends: not modelled here
    return rule(
        KvQuery(
            kv_dtype=kv_dtype,
            arch=arch,
            attention=attention,
            attention_backend=attention_backend,
            deepseek_family=deepseek_family,
        )
    )


def unchecked_note(*, engine: str, kv_dtype: str, arch: Arch | None) -> str | None:
    """The assumption to record when :func:`kv_dtype_refusal` could not decide a dtype it has a rule for."""
    if kv_dtype not in KV_DTYPE_RULES.get(engine, {}):
        return None
    if arch is None:
        return f"kv_cache_dtype {kv_dtype}: whether the GPU runs it is not checked (no GPU preset)"
    if arch.cuda and arch.major is None:
        return f"kv_cache_dtype {kv_dtype}: whether {arch.name} runs it is not checked (compute capability unknown)"
    return None


# ------------------------------------------------------------------------------------------------ context

_VLLM_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
#: rope types whose ``factor`` vLLM does not apply to the derived length (max_position_embeddings already scaled)
_VLLM_UNSCALED_ROPE = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})


def _length(v: Any) -> float | None:
    """A positive finite number from a config field, None for anything else (missing, bool, text, 0 ...)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
        return float(v)
    return None


def _rope_parameters(cfg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rp = cfg.get("rope_parameters")
    if not isinstance(rp, Mapping):
        rp = cfg.get("rope_scaling")
    if not isinstance(rp, Mapping) or not rp:
        return []
    nested = [v for v in rp.values() if isinstance(v, Mapping) and v]
    return nested if nested and len(nested) == len(rp) else [rp]


def vllm_derived_max_model_len(config: Mapping[str, Any]) -> tuple[int | None, str]:
    """(vLLM's derived max_model_len, the config key it came from); (None, "") when no key is present (vLLM then
    takes any --max-model-len).

    Formula: the smallest of the length keys present (``max_position_embeddings``, ``n_positions``, ``max_seq_len``,
    ``seq_length``, ``model_max_length``, ``max_target_positions``, ``max_sequence_length``, ``max_seq_length``,
    ``seq_len``; a ``model_max_length`` replaces it), times the RoPE ``factor`` of rope types other than
    su / longrope / llama3 / yarn / deepseek_yarn / deepseek_llama_scaling (not for Gemma-3).  The tokenizer's
    ``model_max_length`` (tokenizer_config.json) is not read by kvplan.

    Example: Qwen3-8B ``max_position_embeddings`` 40,960 -> (40960, "max_position_embeddings"); a config with
    ``max_position_embeddings`` 4,096 and ``rope_scaling {"type": "linear", "factor": 4}`` -> (16384, ...).

    Source: vllm-project/vllm vllm/transformers_utils/model_arch_config_convertor.py
    ``derive_max_model_len_and_key``; vllm/config/model.py ``_get_and_verify_max_len``, v0.34.0.
    """
    derived, key = math.inf, ""
    for k in _VLLM_LENGTH_KEYS:
        v = _length(config.get(k))
        if v is not None and v < derived:
            derived, key = v, k
    mml = _length(config.get("model_max_length"))
    if mml is not None:
        derived, key = mml, "model_max_length"
    if derived == math.inf:
        return None, ""
    if "gemma3" not in str(config.get("model_type") or ""):
        factor = 1.0
        for rp in _rope_parameters(config):
            rope_type = rp.get("rope_type") or rp.get("type") or "default"
            if rope_type not in _VLLM_UNSCALED_ROPE:
                factor = _length(rp.get("factor", factor)) or 1.0
        derived *= factor
    return int(derived), key


def model_max_context(*, engine: str, model: ModelSpec) -> tuple[int | None, str]:
    """(the longest context the engine accepts without its override, how it is named in a reason).

    SGLang: the derived context length (:attr:`kvplan.hfconfig.spec.ModelSpec.context_length`, ``get_context_length``
    0.5.23); vLLM: :func:`vllm_derived_max_model_len`.  Example: Qwen3-8B -> (40960, "the model's 40,960") on both.
    """
    if engine == VLLM:
        limit, key = vllm_derived_max_model_len(model.config)
        return limit, (f"the model's {limit:,} ({key})" if limit is not None else "")
    limit = model.context_length
    return limit, f"the model's {limit:,}"


def vllm_model_max_length_allows(*, config: Mapping[str, Any], max_model_len: int) -> bool:
    """vLLM also accepts a longer max_model_len up to the config's ``model_max_length``
    (``_get_and_verify_max_len``)."""
    mml = _length(config.get("model_max_length"))
    return mml is not None and max_model_len <= mml


def context_refusal(*, engine: str, model: ModelSpec, context_length: int | None, allowed: bool) -> str | None:
    """Why the engine refuses ``context_length`` (None: it accepts it, or no context was given, or the override
    ``allowed`` it).

    Example: SGLang, Qwen3-8B, 131,072 -> "context_length 131,072 exceeds the model's 40,960: SGLang refuses it unless
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (or --allow-long-context)".
    """
    if context_length is None or allowed:
        return None
    limit, named = model_max_context(engine=engine, model=model)
    if limit is None or context_length <= limit:
        return None
    if engine == VLLM:
        if vllm_model_max_length_allows(config=model.config, max_model_len=context_length):
            return None
        return (
            f"max_model_len {context_length:,} exceeds {named}: vLLM refuses it unless "
            f"{LONG_CONTEXT_ENV[VLLM]}=1 (or --allow-long-context)"
        )
    return (
        f"context_length {context_length:,} exceeds {named}: SGLang refuses it unless "
        f"{LONG_CONTEXT_ENV[SGLANG]}=1 (or --allow-long-context)"
    )


def _sglang_env_bool(name: str, raw: str) -> bool:
    """SGLang's EnvBool (python/sglang/srt/environ.py ``EnvBool.parse``, 0.5.23): true/1/yes/y, false/0/no/n."""
    v = raw.strip().lower()
    if v in ("true", "1", "yes", "y"):
        return True
    if v in ("false", "0", "no", "n", ""):
        return False
    raise InputError(
        f"{name}='{raw[:40]}' is not a boolean SGLang reads (SGLang stops at start-up)",
        field=name,
        hint="set it to 1 or 0",
    )


def _vllm_env_bool(name: str, raw: str) -> bool:
    """vLLM's envs.py: ``os.environ.get(NAME, "0").strip().lower() in ("1", "true")`` (0.34.0)."""
    del name
    return raw.strip().lower() in ("1", "true")


_ENV_BOOL: dict[str, Callable[[str, str], bool]] = {SGLANG: _sglang_env_bool, VLLM: _vllm_env_bool}


def env_allows_long_context(*, engine: str, environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` holds the engine's long-context override, read the way the engine reads it.

    Example: ``env_allows_long_context(engine="sglang", environ={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "yes"})``
    is True; vLLM's ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=yes`` is False (vLLM takes 1 / true only).
    """
    name = LONG_CONTEXT_ENV.get(engine)
    if name is None or name not in environ:
        return False
    return _ENV_BOOL[engine](name, environ[name])


# ------------------------------------------------------------------------------------------------ request cap


def family_request_cap(*, engine: str, family: str, engine_version: str | None) -> int | None:
    """The ``max_running_requests`` an SGLang release sets for a family when the user leaves it unset (DeepSeek-V4:
    256, ``apply_deepseek_v4_defaults``), None otherwise (and always for vLLM, whose max_num_seqs default is its
    usage-context default)."""
    if engine != SGLANG:
        return None
    from kvplan.engines.sglang.releases import rules_for
    from kvplan.family import family_or_none

    fam = family_or_none(family)
    override = rules_for(engine_version).override(fam) if fam is not None else None
    return override.max_running_requests if override is not None else None

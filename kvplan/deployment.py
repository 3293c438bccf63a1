"""What the user asked for: :class:`Deployment`, the default deployment, and the input checks.

Every field of :class:`Deployment` is declared in the flag registry (:mod:`kvplan.flags`: its CLI names, kind,
launch spellings, plan-file key); tests/test_flags.py fails when the two drift apart.

A :class:`Deployment` holds what the user said; ``None`` means "not given" so that each engine can
apply its own default (and say so in ``assumptions``).  With no model given, the whole default
deployment applies (:data:`DEFAULT_DEPLOYMENT`, the one this project started from).
"""

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from kvplan.errors import InputError

DEFAULT_MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"
DEFAULT_GPU = "rtx-pro-6000-maxq"

# The deployment that started this project: DeepSeek-V4.1-Flash on 8x RTX PRO 6000 Blackwell Max-Q,
# SGLang, TP8/EP8, fp8_e4m3 KV, mem_fraction_static 0.72, 1M context, 16 running requests,
# chunked prefill 2048, attention backend dsv4 (docs/default-deployment.md).
DEFAULT_DEPLOYMENT: dict[str, Any] = dict(
    model=DEFAULT_MODEL,
    gpu=DEFAULT_GPU,
    tp=8,
    ep=8,
    dp=1,
    pp=1,
    context_length=1_048_576,
    kv_cache_dtype="fp8_e4m3",
    mem_fraction_static=0.72,
    max_running_requests=16,
    chunked_prefill_size=2048,
    attention_backend="dsv4",
)


#: the parallel layout of :data:`DEFAULT_DEPLOYMENT`, applied whole or not at all
_LAYOUT = ("tp", "ep", "dp", "pp")


@dataclass(init=False, eq=False, repr=False)
class Deployment:
    """One deployment as the user gave it (``None``: not given, the engine's default applies).

    A dataclass (``dataclasses.replace`` / ``fields`` read it: sweep, solve, what-if, plan files) whose ``__init__``
    is written out (``init=False``): the decorator would generate and compile a 47-parameter one at every import,
    about 0.7 ms of each ``kvplan fit`` (docs/performance.md).  tests/test_startup_imports.py checks that it takes
    exactly the fields, in order, with their defaults.
    """

    model: str | None = None
    gpu: str | None = None
    num_gpus: int | None = None
    gpu_memory: int | None = None  # device total override, bytes
    engine: str = "sglang"
    engine_version: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str | None = None
    context_length: int | None = None
    max_running_requests: int | None = None
    page_size: int | None = None
    chunked_prefill_size: int | None = None
    max_total_tokens: int | None = None
    kv_cache_memory_bytes: int | None = None
    free_memory: int | None = None  # measured free per GPU at start (bytes)
    weight_memory: int | None = None  # measured per-GPU weight load (bytes)
    activation_memory: int | None = None
    non_torch_memory: int | None = None
    cuda_graph_memory: int | None = None
    attention_backend: str | None = None
    dsv4_attn_backend: str | None = None  # SGLang --dsv4-attn-backend (auto | flashmla | flashmla_mega | trtllm)
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    disable_cuda_graph: bool = False
    enforce_eager: bool = False
    enable_prefix_caching: bool | None = None  # vLLM; None: the release's default (on for hybrids from 0.28)
    swa_full_tokens_ratio: float | None = None
    dcp_size: int | None = None
    pp_layer_partition: str | None = None
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    mamba_ssm_dtype: str | None = None
    speculative_algorithm: str | None = None
    speculative_num_draft_tokens: int | None = None
    engram_on_host: bool = False
    speculative_dspark_block_size: int | None = None
    moe_dense_tp_size: int | None = None
    enable_dp_lm_head: bool = False
    target_requests: int | None = None
    input_len: int | None = None  # workload: prompt tokens per request
    output_len: int | None = None  # workload: generated tokens per request
    allow_long_context: bool = False  # the engine's long-context override (env var or --allow-long-context)
    speculative_num_steps: int | None = None  # speed only: draft forwards per speculative step
    speculative_eagle_topk: int | None = None  # speed only: EAGLE draft branches
    moe_runner_backend: str | None = None  # speed only: the MoE kernel backend
    quantization: str | None = None  # the engine's --quantization (weights quantized at load); None = the checkpoint's
    interconnect: str | None = None  # link between the ranks (nvlink | pcie | xgmi | network); None = the GPU preset's
    vllm_sampler: str | None = None  # vLLM V1 sampler path: "flashinfer" | "pytorch"; None = the release default
    language_model_only: bool = False  # vLLM --language-model-only: no vision tower built
    limit_mm_per_prompt: str | None = None  # vLLM --limit-mm-per-prompt as given (JSON; zero for all: no tower)

    def __init__(
        self,
        model: str | None = None,
        gpu: str | None = None,
        num_gpus: int | None = None,
        gpu_memory: int | None = None,
        engine: str = "sglang",
        engine_version: str | None = None,
        tp: int | None = None,
        pp: int | None = None,
        dp: int | None = None,
        ep: int | None = None,
        enable_dp_attention: bool = False,
        mem_fraction_static: float | None = None,
        gpu_memory_utilization: float | None = None,
        kv_cache_dtype: str | None = None,
        context_length: int | None = None,
        max_running_requests: int | None = None,
        page_size: int | None = None,
        chunked_prefill_size: int | None = None,
        max_total_tokens: int | None = None,
        kv_cache_memory_bytes: int | None = None,
        free_memory: int | None = None,
        weight_memory: int | None = None,
        activation_memory: int | None = None,
        non_torch_memory: int | None = None,
        cuda_graph_memory: int | None = None,
        attention_backend: str | None = None,
        dsv4_attn_backend: str | None = None,
        disable_radix_cache: bool = False,
        disable_overlap_schedule: bool = False,
        disable_cuda_graph: bool = False,
        enforce_eager: bool = False,
        enable_prefix_caching: bool | None = None,
        swa_full_tokens_ratio: float | None = None,
        dcp_size: int | None = None,
        pp_layer_partition: str | None = None,
        mamba_full_memory_ratio: float | None = None,
        max_mamba_cache_size: int | None = None,
        mamba_ssm_dtype: str | None = None,
        speculative_algorithm: str | None = None,
        speculative_num_draft_tokens: int | None = None,
        engram_on_host: bool = False,
        speculative_dspark_block_size: int | None = None,
        moe_dense_tp_size: int | None = None,
        enable_dp_lm_head: bool = False,
        target_requests: int | None = None,
        input_len: int | None = None,
        output_len: int | None = None,
        allow_long_context: bool = False,
        speculative_num_steps: int | None = None,
        speculative_eagle_topk: int | None = None,
        moe_runner_backend: str | None = None,
        quantization: str | None = None,
        interconnect: str | None = None,
        vllm_sampler: str | None = None,
        language_model_only: bool = False,
        limit_mm_per_prompt: str | None = None,
    ) -> None:
        self.model = model
        self.gpu = gpu
        self.num_gpus = num_gpus
        self.gpu_memory = gpu_memory
        self.engine = engine
        self.engine_version = engine_version
        self.tp = tp
        self.pp = pp
        self.dp = dp
        self.ep = ep
        self.enable_dp_attention = enable_dp_attention
        self.mem_fraction_static = mem_fraction_static
        self.gpu_memory_utilization = gpu_memory_utilization
        self.kv_cache_dtype = kv_cache_dtype
        self.context_length = context_length
        self.max_running_requests = max_running_requests
        self.page_size = page_size
        self.chunked_prefill_size = chunked_prefill_size
        self.max_total_tokens = max_total_tokens
        self.kv_cache_memory_bytes = kv_cache_memory_bytes
        self.free_memory = free_memory
        self.weight_memory = weight_memory
        self.activation_memory = activation_memory
        self.non_torch_memory = non_torch_memory
        self.cuda_graph_memory = cuda_graph_memory
        self.attention_backend = attention_backend
        self.dsv4_attn_backend = dsv4_attn_backend
        self.disable_radix_cache = disable_radix_cache
        self.disable_overlap_schedule = disable_overlap_schedule
        self.disable_cuda_graph = disable_cuda_graph
        self.enforce_eager = enforce_eager
        self.enable_prefix_caching = enable_prefix_caching
        self.swa_full_tokens_ratio = swa_full_tokens_ratio
        self.dcp_size = dcp_size
        self.pp_layer_partition = pp_layer_partition
        self.mamba_full_memory_ratio = mamba_full_memory_ratio
        self.max_mamba_cache_size = max_mamba_cache_size
        self.mamba_ssm_dtype = mamba_ssm_dtype
        self.speculative_algorithm = speculative_algorithm
        self.speculative_num_draft_tokens = speculative_num_draft_tokens
        self.engram_on_host = engram_on_host
        self.speculative_dspark_block_size = speculative_dspark_block_size
        self.moe_dense_tp_size = moe_dense_tp_size
        self.enable_dp_lm_head = enable_dp_lm_head
        self.target_requests = target_requests
        self.input_len = input_len
        self.output_len = output_len
        self.allow_long_context = allow_long_context
        self.speculative_num_steps = speculative_num_steps
        self.speculative_eagle_topk = speculative_eagle_topk
        self.moe_runner_backend = moe_runner_backend
        self.quantization = quantization
        self.interconnect = interconnect
        self.vllm_sampler = vllm_sampler
        self.language_model_only = language_model_only
        self.limit_mm_per_prompt = limit_mm_per_prompt

    def with_defaults(self) -> "Deployment":
        """Apply the project's default deployment when no model was named."""
        if self.model is not None:
            return self
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        defaults = dict(DEFAULT_DEPLOYMENT)
        if self.engine == "vllm":  # SGLang-only knobs of the default deployment; vLLM uses its own defaults
            for k in ("mem_fraction_static", "chunked_prefill_size", "attention_backend"):
                defaults.pop(k)
        if any(given.get(k) is not None for k in ("tp", "ep")):  # the default's TP8/EP8 is one layout: never half
            for k in _LAYOUT:  # of it (`kvplan fit --tp 2` must not meet the default's ep=8; issue 26); --dp or
                defaults.pop(k, None)  # --pp alone keep it (`kvplan fit --dp 8 --enable-dp-attention`)
        merged = {k: (v if given.get(k) is None else given[k]) for k, v in defaults.items()}
        return replace(self, **merged)


def _check_int(name: str, value: int | None, *, minimum: int = 1, maximum: int = 1 << 40) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or value > maximum:
        raise InputError(f"must be an integer between {minimum} and {maximum:,}, got {value!r}", field=name)


def _check_fraction(name: str, value: float | None) -> None:
    if value is None:
        return
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not (0 < value <= 1):
        raise InputError(
            f"must be a fraction in (0, 1], got {value!r}", field=name, hint="e.g. 0.85 (a fraction, not a percentage)"
        )


# SGLang v0.5.23 python/sglang/srt/arg_groups/choices.py ATTENTION_BACKEND_CHOICES, plus vLLM spellings kvplan
# accepts for the same flag (FLASH_ATTN, FLASHINFER, ...: vLLM's attention_backend names, case-insensitive).
ATTENTION_BACKENDS = frozenset(
    (
        "triton",
        "torch_native",
        "flex_attention",
        "dsa",
        "nsa",
        "qsa",
        "dsv4",
        "compressed",
        "fa3",
        "fa4",
        "flashinfer",
        "llada2_cfg_flashinfer",
        "flashmla",
        "trtllm_mla",
        "cutedsl_mla",
        "tokenspeed_mla",
        "trtllm_mha",
        "hpc_ops",
        "minicpm_flashattn",
        "minicpm_flashinfer",
        "aiter",
        "wave",
        "intel_amx",
        "ascend",
        "intel_xpu",
        "flash_attn",
        "flashmla_sparse",
        "rocm_attn",
        "rocm_aiter_fa",
        "tree_attn",
        "cutlass_mla",
        "flash_attn_mla",
        "flashinfer_mla",
        "triton_mla",
    )
)
# SGLang v0.5.23 speculative/spec_info.py SpeculativeAlgorithm (builtins) and fields/spec.py; MTP as vLLM spells it.
SPECULATIVE_ALGORITHMS = frozenset(
    {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO", "FROZEN_KV_MTP", "MTP"}
)


#: the count vLLM gives a modality ``--limit-mm-per-prompt`` leaves out, or an options object without ``count``
#: (vllm/config/multimodal.py ``MultiModalConfig.get_limit_per_prompt`` / ``BaseDummyOptions.count``, v0.34.0)
MM_LIMIT_DEFAULT = 999


def _mm_count(modality: str, value: Any) -> int:
    if isinstance(value, dict):
        value = value.get("count", MM_LIMIT_DEFAULT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(
            f"the {modality!r} limit must be a whole number >= 0, got {value!r}",
            field="--limit-mm-per-prompt",
            hint='e.g. \'{"image": 0, "video": 0}\'',
        )
    return value


def mm_limits(text: str) -> dict[str, int]:
    """The items per prompt of each modality a ``--limit-mm-per-prompt`` value gives (modalities it leaves out get
    vLLM's 999).  vLLM takes a JSON object whose values are counts or options objects with a ``count``
    (vllm/config/multimodal.py ``_validate_limit_per_prompt``, v0.34.0); releases up to 0.8 took ``image=0,video=0``
    (``nullable_kvs``), read here too.  Example: ``'{"image": 0, "video": {"count": 1, "num_frames": 8}}'`` ->
    ``{"image": 0, "video": 1}``; ``"image=2"`` -> ``{"image": 2}``.  A value neither form reads: InputError."""
    import json

    raw = text.strip()
    if raw.startswith("{"):
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise InputError(
                f"is not valid JSON ({exc})", field="--limit-mm-per-prompt", hint='e.g. \'{"image": 0, "video": 0}\''
            ) from None
        if not isinstance(parsed, dict):
            raise InputError("must be a JSON object", field="--limit-mm-per-prompt")
        return {str(k): _mm_count(str(k), v) for k, v in parsed.items()}
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, val = part.partition("=")
        if not sep or not key.strip() or not val.strip().isdigit():
            raise InputError(
                f"cannot read {text!r}", field="--limit-mm-per-prompt", hint='e.g. \'{"image": 0, "video": 0}\''
            )
        out[key.strip()] = int(val.strip())
    return out


def validate(dep: Deployment) -> None:
    """Reject nonsense before any arithmetic: one error naming the CLI flag."""
    _check_int("--tp-size", dep.tp, maximum=4096)
    _check_int("--pp-size", dep.pp, maximum=1024)
    _check_int("--dp-size", dep.dp, maximum=4096)
    _check_int("--ep-size", dep.ep, maximum=4096)
    _check_int("--num-gpus", dep.num_gpus, maximum=1 << 20)
    _check_int("--context-length", dep.context_length, minimum=2, maximum=1 << 34)
    _check_int("--max-running-requests", dep.max_running_requests, maximum=1 << 24)
    _check_int("--page-size", dep.page_size, maximum=1 << 16)
    _check_int("--max-total-tokens", dep.max_total_tokens, maximum=1 << 40)
    _check_int("--requests", dep.target_requests, maximum=1 << 24)
    _check_int("--input-len", dep.input_len, maximum=1 << 34)
    _check_int("--output-len", dep.output_len, minimum=0, maximum=1 << 34)
    _check_int("--speculative-num-draft-tokens", dep.speculative_num_draft_tokens, minimum=0, maximum=1024)
    _check_int("--speculative-dspark-block-size", dep.speculative_dspark_block_size, maximum=1024)
    _check_int("--speculative-num-steps", dep.speculative_num_steps, minimum=0, maximum=1024)
    _check_int("--speculative-eagle-topk", dep.speculative_eagle_topk, maximum=1024)
    _check_int("--moe-dense-tp-size", dep.moe_dense_tp_size, maximum=4096)
    cps = dep.chunked_prefill_size
    if cps is not None and (isinstance(cps, bool) or not isinstance(cps, int) or cps == 0 or cps < -1 or cps > 1 << 24):
        raise InputError(f"must be a positive integer or -1 (disabled), got {cps!r}", field="--chunked-prefill-size")
    _check_fraction("--mem-fraction-static", dep.mem_fraction_static)
    _check_fraction("--gpu-memory-utilization", dep.gpu_memory_utilization)
    if dep.swa_full_tokens_ratio is not None:
        _check_fraction("--swa-full-tokens-ratio", dep.swa_full_tokens_ratio)
    if dep.mamba_full_memory_ratio is not None:
        r = dep.mamba_full_memory_ratio
        if not isinstance(r, (int, float)) or not math.isfinite(r) or not (0 < r <= 100):
            raise InputError(
                f"must be a positive ratio, got {r!r}", field="--mamba-full-memory-ratio", hint="e.g. 0.9 (state : KV)"
            )
    _check_int("--max-mamba-cache-size", dep.max_mamba_cache_size, maximum=1 << 24)
    _check_int("--dcp-size", dep.dcp_size, maximum=4096)
    if dep.limit_mm_per_prompt is not None:
        mm_limits(dep.limit_mm_per_prompt)
    if dep.engine not in ("sglang", "vllm"):
        raise InputError(f"unknown engine '{dep.engine}'", field="--engine", hint="use sglang or vllm")
    if dep.attention_backend is not None and dep.attention_backend.lower() not in ATTENTION_BACKENDS:
        import difflib

        close = difflib.get_close_matches(dep.attention_backend.lower(), sorted(ATTENTION_BACKENDS), n=2)
        raise InputError(
            f"unknown attention backend '{dep.attention_backend}'",
            field="--attention-backend",
            hint=("did you mean " + " or ".join(close) + "?")
            if close
            else f"see the --attention-backend choices of {dep.engine} --help",
        )
    if dep.speculative_algorithm is not None and dep.speculative_algorithm.upper() not in SPECULATIVE_ALGORITHMS:
        raise InputError(
            f"unknown speculative algorithm '{dep.speculative_algorithm}'",
            field="--speculative-algorithm",
            hint="use one of " + ", ".join(sorted(SPECULATIVE_ALGORITHMS)),
        )
    tp, dp = dep.tp or 1, dep.dp or 1
    if dep.enable_dp_attention and tp % dp:
        raise InputError(
            f"--tp-size {tp} is not divisible by --dp-size {dp}",
            field="--dp-size",
            hint="with --enable-dp-attention, dp must divide tp",
        )

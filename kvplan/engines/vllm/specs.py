"""vLLM per-layer KV-cache specs, read from a Hugging Face ``config.json`` dict, one builder per family.

Pure functions; stdlib only.  Every byte count is an ``int``.  The engine facts
implemented here were read in the vLLM 0.33.0 wheel (``vllm-project/vllm``,
commit 4ba787ec9); the code is not copied, only the arithmetic is restated.

* Page of an attention layer (``vllm/v1/kv_cache_interface.py``
  ``AttentionSpec.unpadded_page_size_bytes``, v0.33.0)::

      page = block_size * heads_per_rank * (head_size_k + head_size_v) * dtype_bytes

  with ``heads_per_rank = max(1, kv_heads // tp)`` (``vllm/config/model.py``
  ``ModelConfig.get_num_kv_heads``).  Example: Llama-3.1-8B, TP1, bf16, block 16:
  ``16 * 8 * (128 + 128) * 2 = 65,536 B`` per layer, ``32 * 4,096 = 131,072 B`` per token.
* MLA (``MLAAttentionSpec``; ``model_executor/layers/attention/mla_attention.py``
  ``MLAAttention.get_kv_cache_spec``): one latent of ``kv_lora_rank + qk_rope_head_dim``
  (576) elements per token, no V, on *every* TP rank; ``fp8_ds_mla`` stores 656 B per token.
* DeepSeek-V3.2-style indexer (``models/deepseek_v2.py`` ``DeepseekV32IndexerCache``):
  ``index_head_dim + index_head_dim // 128 * 4`` = 132 B per token, only on layers whose
  indexer is not skipped (``DeepseekV2MLAAttention.__init__``: ``index_topk_freq``,
  ``index_skip_topk_offset``, ``index_topk_pattern``).
* Mamba / Gated-DeltaNet state (``model_executor/layers/mamba/mamba_utils.py``
  ``MambaStateShapeCalculator.mamba2_state_shape`` / ``gated_delta_net_state_shape``).

The family of a config is decided the way vLLM's model classes decide it (:func:`kvplan.hfconfig.detect.vllm_family`:
DeepSeek-V4 caches, MLA with or without the DSA indexer, else attention layers by type, with Mamba / GDN state layers,
from :func:`kvplan.hfconfig.layer_kinds.layer_kinds`), and :data:`SPEC_BUILDERS` maps it to its builder.  vLLM's
reading can differ from SGLang's (``kvplan.hfconfig.detect.detect_family``): Gemma-2/3 are sliding-window hybrids
here, Llama-4's chunked layers are full attention.  Adding a family = one builder named by its
:class:`~kvplan.family.FamilySpec` row (``vllm_spec``); :data:`SPEC_BUILDERS` is derived from the rows.

The config is normalised once by the shared reader (``kvplan.hfconfig.normalize.flatten_config`` with
``engine="vllm"``: vLLM's ``hf_text_config`` over the top level), and every field is read through
:mod:`kvplan.engines.vllm.fields` (a malformed field is an InputError naming it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from kvplan.engines.vllm.fields import (
    MAX_INT,
    bad_field,
    int_if_set,
    int_list,
    int_or,
    model_type,
    num_layers,
    req_int,
    str_or,
)
from kvplan.errors import InputError
from kvplan.family import FAMILY_SPECS, Family, resolve
from kvplan.geometry.layers import HeadGeometry, full_layer_geometry, kv_shared_layers, sliding_layer_geometry
from kvplan.hfconfig.detect import vllm_family
from kvplan.hfconfig.dtypes import DType, dtype_of
from kvplan.hfconfig.layer_kinds import layer_kinds as _layer_kinds
from kvplan.hfconfig.normalize import flatten_config

#: the dtype names vLLM's specs size, ``--kv-cache-dtype`` values and config dtype fields alike (``auto`` is resolved
#: by the caller); their widths are :class:`kvplan.hfconfig.dtypes.DType`'s (``vllm/config/cache.py`` ``CacheDType``,
#: ``vllm/utils/torch_utils.py`` ``STR_DTYPE_TO_TORCH_DTYPE``, v0.25.1)
KV_CACHE_DTYPES: tuple[str, ...] = (
    "auto",
    "bfloat16",
    "float16",
    "half",
    "bf16",
    "fp16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "float32",
    "fp32",
    "fp8_ds_mla",
    "fp8_per_token_head",
    "int8_per_token_head",
    "int4_per_token_head",
    "nvfp4",
)


def _named_bytes(name: str) -> int | None:
    """Element bytes of a name in :data:`KV_CACHE_DTYPES` (None for ``auto`` and any other name)."""
    d = dtype_of(name) if name in KV_CACHE_DTYPES else None
    return None if d is None else d.bytes


#: bytes per KV head per token of the quantized modes whose width is not ``(hk + hv) × element``
#: (``vllm/v1/kv_cache_interface.py`` ``get_kv_quant_mode``, ``AttentionSpec.page_size_bytes``,
#: ``real_page_size_bytes``; ``utils/torch_utils.py`` ``nvfp4_kv_cache_full_dim``, v0.25.1): the
#: ``*_per_token_head`` modes add one fp32 scale per token per head for K and for V (+8 B); INT4 packs two
#: values per byte; NVFP4 stores ``h/2`` packed bytes plus ``h/16`` fp8 block-16 scales per side.
#: Example, head 128: fp8_per_token_head 256 + 8 = 264; int4_per_token_head 64 + 64 + 8 = 136; nvfp4 2 × 72 = 144.
KV_QUANT_HEAD_BYTES: Mapping[str, Callable[[int, int], int]] = {
    "fp8_per_token_head": lambda hk, hv: hk + hv + 8,
    "int8_per_token_head": lambda hk, hv: hk + hv + 8,
    "int4_per_token_head": lambda hk, hv: hk // 2 + hv // 2 + 8,
    "nvfp4": lambda hk, hv: hk // 2 + hk // 16 + hv // 2 + hv // 16,
}


@dataclass(frozen=True)
class LayerKind:
    """One kind of vLLM KV spec (:attr:`LayerKV.kind`), declared once: ``label`` is what ``kvplan show`` calls it;
    ``role`` how the sweep's array formulas count it (``full``: every token of a request, ``sliding``: a window of
    them, ``chunked``: a local chunk, ``state``: one state per request, ``other``: none of those); ``group_as`` the
    type the common grouping merges it under (full, MLA and indexer layers are all full-attention-like)."""

    label: str
    role: str
    group_as: str


#: every vLLM KV-spec kind kvplan builds (a new kind is one row here; ``kvplan.engines.vllm.vector``,
#: ``kvplan.engines.vllm.grouping`` and ``kvplan show`` read it)
LAYER_KINDS: Mapping[str, LayerKind] = MappingProxyType(
    {
        "full": LayerKind("full attention", "full", "full"),
        "swa": LayerKind("sliding window", "sliding", "swa"),
        "chunked": LayerKind("chunked local", "chunked", "chunked"),
        "mla": LayerKind("MLA", "full", "full"),
        "indexer": LayerKind("DSA indexer", "full", "full"),
        "mamba": LayerKind("Mamba / linear-attention state", "state", "mamba"),
        "dsv4_c": LayerKind("DSV4 compressed MLA", "full", "dsv4_c"),
        "dsv4_idx": LayerKind("DSV4 indexer", "other", "dsv4_idx"),
        "dsv4_swa": LayerKind("DSV4 sliding window", "sliding", "dsv4_swa"),
        "dsv4_state": LayerKind("DSV4 compressor state", "sliding", "dsv4_state"),
    }
)


def kinds_of_role(role: str) -> frozenset[str]:
    """The kinds of :data:`LAYER_KINDS` with ``role``.  Example: ``kinds_of_role("sliding")`` ->
    ``{"swa", "dsv4_swa", "dsv4_state"}``."""
    return frozenset(k for k, v in LAYER_KINDS.items() if v.role == role)


def kind_label(kind: str) -> str:
    """What ``kvplan show`` calls a spec kind (the kind itself when it has no row)."""
    row = LAYER_KINDS.get(kind)
    return row.label if row is not None else kind


@dataclass(frozen=True)
class LayerKV:
    """One KV-cache tensor of one layer, as vLLM sees it (one ``KVCacheSpec``).

    kind: ``full`` | ``mla`` | ``indexer`` | ``swa`` | ``chunked`` | ``mamba`` |
    DeepSeek-V4 kinds ``dsv4_c`` (compressed MLA), ``dsv4_idx``, ``dsv4_swa``, ``dsv4_state``.
    ``token_bytes``: bytes per token (attention kinds; per *state* for DSv4 kinds);
    ``state_bytes``: bytes of one Mamba state (Mamba only).
    """

    name: str
    kind: str
    layer: int  # decoder-layer index (for PP placement)
    token_bytes: int = 0
    state_bytes: int = 0
    window: int | None = None  # sliding window / chunk size
    block_size: int | None = None  # fixed block size (DSv4 caches); None = the model's
    tokens_per_state: int = 1
    alignment: int = 1  # page rounded up to a multiple of this
    stride_alignment: int = 1  # ``get_block_stride_alignment()`` of the spec (0.32+, a divisor of its page):
    # 1 for every spec kvplan builds on CUDA (Release.block_stride_bytes)

    def page_bytes(self, block_size: int) -> int:
        """Bytes of one block of this tensor (Mamba: one state; its padding is set by grouping)."""
        if self.kind == "mamba":
            return self.state_bytes
        bs = self.block_size or block_size
        raw = (bs // self.tokens_per_state) * self.token_bytes
        return -(-raw // self.alignment) * self.alignment


@dataclass(frozen=True)
class ModelKV:
    """Per-rank KV layout of a model for one TP size: its layers and its family facts."""

    layers: tuple[LayerKV, ...]
    num_decoder_layers: int
    family: Family
    attn_token_bytes_1layer: int  # one attention layer's bytes/token (hybrid block unification)
    notes: tuple[str, ...] = field(default_factory=tuple)
    token_bytes_add_up: bool = True  # Σ token_bytes = bytes per token (False: DeepSeek-V4's per-state sizes)
    mamba_prefix_caching: bool = True  # the model class supports Mamba prefix caching (``SupportsMambaPrefixCaching``)
    attention_free: bool = False  # an ``IsAttentionFree`` class (pure Mamba): prefix caching off by default
    kv_dtype_bytes: int = 2  # bytes of one KV element after ``auto`` is resolved (1 = an fp8 cache)
    kv_dtype: str = "auto"  # the KV dtype ``auto`` resolved to (resolve_kv_cache_dtype); "auto": the model's dtype
    qk_nope_head_dim: int | None = None  # MLA: the non-RoPE query/key width (FlashInfer-MLA accepts 64 / 128 / 192)
    state_mixer: str | None = None  # the one mixer of every state layer: "mamba2", "mamba1", "gdn", "kda" or
    # "flashkda" (KDA on the FlashKDA prefill); None: no state layers, or mixed

    @property
    def has_state_layers(self) -> bool:
        """Mamba / GDN layers (a hybrid whose state blocks come from the same pool)."""
        return any(x.kind == "mamba" for x in self.layers)

    @property
    def max_mamba_state_bytes(self) -> int:
        """The largest Mamba / GDN state of the model (0 without state layers)."""
        return max((x.state_bytes for x in self.layers if x.kind == "mamba"), default=0)


@dataclass(frozen=True)
class SpecContext:
    """What a spec builder needs beyond the config: the deployment's knobs and the resolved KV dtype."""

    num_layers: int
    tp_size: int
    kv_cache_dtype: str  # as given (``auto`` ...)
    resolved_kv_dtype: str  # after the checkpoint / platform rule (:func:`resolve_kv_cache_dtype`)
    dtype_bytes: int  # bytes of one KV element
    sm_major: int | None = None
    sparse_mla_format: str | None = None
    mamba_ssm_cache_dtype: str = "auto"
    num_draft_layers: int = 0
    family: Family = Family.GQA
    chunked_local_hybrid: bool = True  # chunked-local layers keep their own spec (hybrid KV manager on, ≥0.14)
    sliding_hybrid: bool = True  # sliding-window layers keep their own spec (False: 0.8)
    skip_layers: tuple[str, ...] = ()  # ``kv_cache_dtype_skip_layers``: indices or "sliding_window"


SpecBuilder = Callable[[Mapping[str, Any], SpecContext], ModelKV]


def model_dtype_bytes(cfg: Mapping[str, Any]) -> int:
    """Bytes of the model dtype: 2.  vLLM serves fp32 checkpoints in 16-bit by default
    (``vllm/config/model.py`` ``_get_and_verify_dtype`` downcasts float32; :func:`served_model_dtype`)."""
    return 2


def served_model_dtype(*, config_dtype: str, sm_major: int | None) -> str:
    """The dtype vLLM serves a model in under ``--dtype auto``: the config's, except that a float32 checkpoint is
    downcast to the platform's preferred dtype, the first of its supported dtypes: bfloat16 on a GPU of compute
    capability 8.0 or above (or one kvplan has no capability for), float16 below.  The ``auto`` KV cache follows.

    Example: ``served_model_dtype(config_dtype="fp32", sm_major=9) == "bf16"``; ``sm_major=7`` (T4) -> ``"fp16"``;
    ``config_dtype="fp16"`` stays ``"fp16"``.

    Source: vllm-project/vllm vllm/config/model.py ``_resolve_auto_dtype`` (v0.32.0; "Downcast for float32 models"
    to ``current_platform.supported_dtypes``' first that the model type allows).
    """
    if config_dtype != DType.FP32.canonical:
        return config_dtype
    return DType.FP16.canonical if sm_major is not None and sm_major < 8 else DType.BF16.canonical


def checkpoint_kv_scheme(cfg: Mapping[str, Any]) -> str | None:
    """KV dtype a checkpoint declares (``vllm/utils/torch_utils.py`` ``get_kv_cache_quant_algo_string``):
    ModelOpt ``kv_cache_quant_algo`` FP8 or llm-compressor ``kv_cache_scheme`` -> ``fp8``."""
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping):
        return None
    algo = q.get("kv_cache_quant_algo")
    if isinstance(q.get("quantization"), Mapping):
        algo = algo or q["quantization"].get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.upper().startswith("FP8"):
        return "fp8"
    scheme = q.get("kv_cache_scheme")
    if isinstance(scheme, Mapping) and scheme.get("num_bits") == 8:
        return "fp8"
    return None


def kv_dtype_bytes(kv_cache_dtype: str) -> int:
    """Bytes of one element of a KV dtype name (``--kv-cache-dtype``); ``auto`` is resolved by the caller."""
    b = _named_bytes(kv_cache_dtype)
    if b is None:
        raise InputError(
            f"unsupported kv_cache_dtype '{kv_cache_dtype}'",
            field="kv_cache_dtype",
            hint="use auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2 or fp8_ds_mla",
        )
    return b


def _config_dtype_bytes(cfg: Mapping[str, Any], key: str, default: str) -> int:
    """Bytes of a dtype the config names in ``key`` (``default`` when unset)."""
    name = str_or(cfg, key, default)
    b = _named_bytes(name)
    if b is None:
        raise bad_field(key, f"names no dtype kvplan knows ({name[:40]!r}); use bfloat16, float16 or float32")
    return b


def head_dim(cfg: Mapping[str, Any]) -> int:
    """``head_dim``, else ``hidden_size // num_attention_heads``."""
    hd = int_if_set(cfg, "head_dim")
    if hd:
        return hd
    return req_int(cfg, "hidden_size") // req_int(cfg, "num_attention_heads", minimum=1)


def kv_heads_per_rank(total_kv_heads: int, tp: int) -> int:
    """``max(1, kv_heads // tp)`` (``ModelConfig.get_num_kv_heads``, v0.33.0)."""
    return max(1, total_kv_heads // tp)


def dsa_indexer_layers(cfg: Mapping[str, Any]) -> list[int]:
    """Layers that own an indexer K cache (``DeepseekV2MLAAttention.__init__``, v0.33.0):
    skipped when ``max(i - offset + 1, 0) % freq != 0`` (or pattern[i] == "S").

    Example: GLM-5.2 (78 layers, ``index_topk_freq`` 4, offset 3) -> layers 0, 1, 2, 6, 10, ... 74: 21 layers."""
    n = num_layers(cfg)
    freq = int_if_set(cfg, "index_topk_freq", 1, minimum=-MAX_INT)
    offset = int_or(cfg, "index_skip_topk_offset", 2, minimum=-MAX_INT)
    pattern = cfg.get("index_topk_pattern")
    if pattern is not None and not isinstance(pattern, (str, list)):
        raise bad_field("index_topk_pattern", "must be a string or a list")
    out = []
    for i in range(n):
        if pattern is not None and 0 <= i < len(pattern):
            skip = pattern[i] == "S"
        else:
            skip = max(i - offset + 1, 0) % freq != 0
        if not skip:
            out.append(i)
    return out


def _mamba2_state_bytes(cfg: Mapping[str, Any], tp: int, conv_b: int, ssm_b: int) -> int:
    """Mamba2 conv + SSM state per rank (``MambaStateShapeCalculator.mamba2_state_shape``, v0.33.0)."""
    heads = req_int(cfg, "mamba_num_heads", minimum=1)
    hdim = req_int(cfg, "mamba_head_dim")
    inter = heads * hdim
    ngroups = req_int(cfg, "n_groups", 1, minimum=1)
    if ngroups % tp:
        ngroups += tp - ngroups
    state = int_if_set(cfg, "ssm_state_size") or int_if_set(cfg, "mamba_d_state") or 128
    kern = int_if_set(cfg, "conv_kernel") or int_if_set(cfg, "mamba_d_conv") or 4
    conv = (inter + 2 * ngroups * state) // tp * (kern - 1)
    ssm = heads // tp * hdim * state
    return conv * conv_b + ssm * ssm_b


def _gdn_state_bytes(cfg: Mapping[str, Any], tp: int, conv_b: int, ssm_b: int) -> int:
    """Gated-DeltaNet conv + recurrent state per rank (``gated_delta_net_state_shape``, v0.33.0)."""
    nk = req_int(cfg, "linear_num_key_heads", minimum=1)
    nv = req_int(cfg, "linear_num_value_heads", minimum=1)
    hk, hv = req_int(cfg, "linear_key_head_dim"), req_int(cfg, "linear_value_head_dim")
    kern = req_int(cfg, "linear_conv_kernel_dim", 4)
    conv = (hk * nk * 2 + hv * nv) // tp * (kern - 1)
    ssm = nv // tp * hv * hk
    return conv * conv_b + ssm * ssm_b


def _mamba1_state_bytes(cfg: Mapping[str, Any], tp: int, conv_b: int, ssm_b: int) -> int:
    """Mamba-1 conv + SSM state per rank (``MambaStateShapeCalculator.mamba1_state_shape``, v0.25.1)::

        I = mamba_expand × hidden_size;  conv (d_conv − 1, I/tp);  ssm (I/tp, d_state)

    Example: Jamba-v0.1 TP2 bf16: I 8,192 -> 3 × 4,096 × 2 + 4,096 × 16 × 2 = 24,576 + 131,072 = 155,648 B."""
    inter = req_int(cfg, "mamba_expand", minimum=1) * req_int(cfg, "hidden_size", minimum=1)
    state = req_int(cfg, "mamba_d_state", 16, minimum=1)
    kern = req_int(cfg, "mamba_d_conv", 4, minimum=1)
    return (kern - 1) * (inter // tp) * conv_b + (inter // tp) * state * ssm_b


_STATE_BYTES = {"mamba": _mamba2_state_bytes, "mamba1": _mamba1_state_bytes, "gdn": _gdn_state_bytes}


def _ssm_dtype_bytes(cfg: Mapping[str, Any], mamba_ssm_cache_dtype: str) -> int:
    """``mamba_ssm_cache_dtype``: auto = model dtype, except NemotronH (config value or
    float32, ``NemotronHForCausalLMConfig``) and Qwen3.5 (config ``mamba_ssm_dtype``)."""
    if mamba_ssm_cache_dtype != "auto":
        return kv_dtype_bytes(mamba_ssm_cache_dtype)
    if model_type(cfg).startswith("nemotron_h"):
        return _config_dtype_bytes(cfg, "mamba_ssm_cache_dtype", "float32")
    if cfg.get("mamba_ssm_dtype"):
        return _config_dtype_bytes(cfg, "mamba_ssm_dtype", "auto")
    return model_dtype_bytes(cfg)


def resolve_kv_cache_dtype(cfg: Mapping[str, Any], kv_cache_dtype: str, sm_major: int | None) -> str:
    """``auto`` -> checkpoint KV scheme if declared; GLM-DSA on SM10x -> ``fp8_e4m3``
    (``GlmMoeDsaForCausalLM.verify_and_update_config``, v0.33.0); else model dtype."""
    if kv_cache_dtype != "auto":
        return kv_cache_dtype
    declared = checkpoint_kv_scheme(cfg)
    if declared:
        return declared
    if cfg.get("model_type") == "glm_moe_dsa" and sm_major == 10:
        return "fp8_e4m3"
    return "auto"


# --------------------------------------------------------------------------- builders


def _skipped(ctx: SpecContext, i: int, kind: str) -> bool:
    """Layer ``i`` is kept at the model dtype by ``kv_cache_dtype_skip_layers`` (its index, or
    ``sliding_window`` for a sliding layer; ``model_executor/layers/attention/attention.py``, v0.25.1)."""
    return str(i) in ctx.skip_layers or (kind == "swa" and "sliding_window" in ctx.skip_layers)


def attention_token_bytes(geom: HeadGeometry, *, tp: int, kv_dtype: str, dtype_bytes: int) -> int:
    """Bytes per token of one attention layer: ``heads_per_rank × width`` with width ``(hk + hv) × element``,
    or the packed / scaled width of :data:`KV_QUANT_HEAD_BYTES`.
    Example: Gemma-4 26B full layer, TP1, bf16: 2 × (512 + 512) × 2 = 4,096."""
    heads = kv_heads_per_rank(geom.kv_heads, tp)
    packed = KV_QUANT_HEAD_BYTES.get(kv_dtype)
    if packed is not None:
        return heads * packed(geom.head_dim, geom.v_head_dim)
    return geom.token_bytes(heads_per_rank=heads, dtype_bytes=dtype_bytes)


def _attention_layer(
    kind: str, i: int, per_tok: int, window: int | None, chunk: int | None, ctx: SpecContext
) -> LayerKV | None:
    """One attention layer of a given kind (state layers are built by the caller)."""
    if kind == "swa" and ctx.sliding_hybrid:
        return LayerKV(f"l{i}.attn", "swa", i, token_bytes=per_tok, window=window)
    if kind == "swa":  # 0.8: no hybrid manager, every layer a FullAttentionSpec (gpu_model_runner.py, v0.8.0)
        return LayerKV(f"l{i}.attn", "full", i, token_bytes=per_tok)
    if kind == "chunked" and ctx.chunked_local_hybrid:
        return LayerKV(f"l{i}.attn", "chunked", i, token_bytes=per_tok, window=chunk)
    if kind in ("full", "chunked"):
        # Before 0.14 the hybrid manager is off for chunked-local attention
        # (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE default "0", envs.py 0.11.1-0.13.0), so these
        # layers are promoted to full attention for allocation (unify_hybrid_kv_cache_specs).
        return LayerKV(f"l{i}.attn", "full", i, token_bytes=per_tok)
    return None


def _per_kind_token_bytes(cfg: Mapping[str, Any], ctx: SpecContext) -> dict[str, tuple[int, int]]:
    """(bytes per token at the KV dtype, at the model dtype) of a full and of a sliding / chunked layer."""
    full, sliding = full_layer_geometry(cfg), sliding_layer_geometry(cfg)
    model_b = model_dtype_bytes(cfg)
    out = {}
    for kind, geom in (("full", full), ("swa", sliding), ("chunked", sliding)):
        out[kind] = (
            attention_token_bytes(geom, tp=ctx.tp_size, kv_dtype=ctx.resolved_kv_dtype, dtype_bytes=ctx.dtype_bytes),
            attention_token_bytes(geom, tp=ctx.tp_size, kv_dtype="auto", dtype_bytes=model_b),
        )
    if out["full"][0] <= 0 or out["swa"][0] <= 0:
        raise bad_field(
            "head_dim",
            "gives the attention layers no KV bytes (head_dim or "
            "hidden_size // num_attention_heads must be at least 1)",
        )
    return out


#: model classes that declare ``SupportsMambaPrefixCaching`` (``model_executor/models/*.py``, the same eight in the
#: 0.11.1, 0.14.0, 0.15.0, 0.22.0 and 0.23.0 wheels; Bamba's class no longer declares it from 0.24.0)
MAMBA_PREFIX_CACHING_ARCHS = frozenset(
    {
        "BambaForCausalLM",
        "FalconH1ForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "JambaForCausalLM",
        "Mamba2ForCausalLM",
        "MambaForCausalLM",
        "NemotronHForCausalLM",
        "Zamba2ForCausalLM",
    }
)


#: the ``IsAttentionFree`` model classes (``ModelConfig.attn_type`` "attention_free"): ``models/mamba.py``
#: ``MambaForCausalLM`` (``FalconMambaForCausalLM`` maps to it in ``models/registry.py``), ``models/mamba2.py``
#: ``Mamba2ForCausalLM``, v0.28.0 / v0.34.0 (``terratorch.py`` is a pooling model, not planned)
ATTENTION_FREE_ARCHS = frozenset({"FalconMambaForCausalLM", "Mamba2ForCausalLM", "MambaForCausalLM"})


def is_attention_free(cfg: Mapping[str, Any]) -> bool:
    """Whether the config's architecture is an ``IsAttentionFree`` class (``ModelConfig.is_attention_free``,
    v0.34.0): ``Mamba2ForCausalLM`` yes; ``NemotronHForCausalLM`` no, even with no attention layer in its
    pattern (an ``IsHybrid`` class: ``attn_type`` "hybrid").  A config without ``architectures``: no."""
    archs = cfg.get("architectures")
    return isinstance(archs, list) and any(a in ATTENTION_FREE_ARCHS for a in archs if isinstance(a, str))


def supports_mamba_prefix_caching(cfg: Mapping[str, Any]) -> bool:
    """Whether the config's architecture is a ``SupportsMambaPrefixCaching`` class (``ModelConfig.
    supports_mamba_prefix_caching``, v0.22.0): Nemotron-H, Jamba, Falcon-H1 ... yes; Qwen3-Next (GDN), KDA no.
    A config without ``architectures`` is taken as not supporting it."""
    archs = cfg.get("architectures")
    return isinstance(archs, list) and any(a in MAMBA_PREFIX_CACHING_ARCHS for a in archs if isinstance(a, str))


def build_attention(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
    """GQA / MHA, sliding-window and Mamba / GDN hybrids: one K+V page per attention layer (its own head
    geometry by layer type, :mod:`kvplan.geometry.layers`), one state per state layer; layers that read
    another layer's KV (``kv_sharing_target_layer_name``) get no spec (``GPUModelRunner.get_kv_cache_spec``
    skips them, v0.25.1).  Example: Llama-3.1-8B TP1 bf16: 8 × (128 + 128) × 2 = 4,096 B per token per layer;
    Gemma-4 26B-A4B: full layers 2 × (512 + 512) × 2 = 4,096, sliding 8 × (256 + 256) × 2 = 8,192."""
    kinds = _layer_kinds(cfg)
    per_kind = _per_kind_token_bytes(cfg, ctx)
    conv_b = model_dtype_bytes(cfg)
    ssm_b = _ssm_dtype_bytes(cfg, ctx.mamba_ssm_cache_dtype)
    window = int_if_set(cfg, "sliding_window") or int_if_set(cfg, "sliding_window_size") or None
    chunk = int_if_set(cfg, "attention_chunk_size") or None
    if "swa" in kinds and window is None:
        raise bad_field("sliding_window", "must be at least 1 for the sliding-attention layers")
    states = {k: fn(cfg, ctx.tp_size, conv_b, ssm_b) for k, fn in _STATE_BYTES.items() if k in kinds}
    shared = kv_shared_layers(cfg, len(kinds))
    layers: list[LayerKV] = []
    for i, k in enumerate(kinds):
        if k in states:
            layers.append(LayerKV(f"l{i}.{k}", "mamba", i, state_bytes=states[k]))
            continue
        if i in shared or k not in per_kind:
            continue
        per_tok = per_kind[k][1 if _skipped(ctx, i, k) else 0]
        lay = _attention_layer(k, i, per_tok, window, chunk, ctx)
        if lay is not None:
            layers.append(lay)
    notes = []
    if "chunked" in kinds:
        notes.append(
            "chunked-local layers keep their own spec (chunk + batched tokens; hybrid KV manager on, ≥0.14)"
            if ctx.chunked_local_hybrid
            else "chunked-local layers allocated as full attention (hybrid KV manager disabled before 0.14)"
        )
    if shared:
        notes.append(
            f"{len(shared)} KV-sharing layers store no KV (vLLM skips layers with kv_sharing_target_layer_name)"
        )
    mixers = {_MIXER[k] for k in kinds if k in states}
    return ModelKV(
        tuple(layers),
        ctx.num_layers,
        ctx.family,
        per_kind["full"][0],
        tuple(notes),
        mamba_prefix_caching=supports_mamba_prefix_caching(cfg),
        attention_free=is_attention_free(cfg),
        state_mixer=mixers.pop() if len(mixers) == 1 else None,
    )


#: the state mixer of each state-layer kind of :func:`_layer_kinds` (``Release.prefill_checkpoint_mixers``)
_MIXER = {"mamba": "mamba2", "mamba1": "mamba1", "gdn": "gdn"}


def kda_mixer(lac: Mapping[str, Any], *, sm_major: int | None) -> str:
    """ "flashkda" when vLLM's KDA layer takes the FlashKDA prefill (and so declares a prefill-checkpoint block from
    0.29), else "kda".  FlashKDA needs CUDA SM 9 / 10 / 12, ``head_dim`` 128, bf16 activations (kvplan's model
    dtype) and a bounded gate (``linear_attn_config.gate_lower_bound`` set); the recurrent state is fp32
    (``models/kimi_k3/nvidia/kda.py`` ``is_flashkda_supported`` / ``resolve_kda_prefill_backend``, v0.29.0 /
    v0.33.0).  Example: a Kimi-K3-style config with ``gate_lower_bound`` -5 on an H100 (SM 9) -> "flashkda";
    Kimi-Linear-48B (no ``gate_lower_bound``) -> "kda"; the same K3 config on an A100 (SM 8) -> "kda"."""
    bounded = lac.get("gate_lower_bound") is not None
    return "flashkda" if bounded and sm_major in (9, 10, 12) and lac.get("head_dim") == 128 else "kda"


#: vLLM's DeepSeek sparse-MLA cache *layout* word (``--kv-cache-dtype fp8_ds_mla``, or the sparse format vLLM picks
#: for a DSA model with a quantized cache off SM100): 512 fp8 latent values + 4 fp32 scales + 64 bf16 rope values =
#: 656 B per token (the layout note in ``v1/attention/backends/mla/flashmla_sparse.py``; ``model_executor/layers/
#: attention/mla_attention.py`` ``MLAAttention.get_kv_cache_spec`` sizes the row by the word; read in v0.34.0).
#: :class:`~kvplan.hfconfig.dtypes.DType` folds the word into FP8_E4M3 (its values), so the layout test reads the word.
_DS_MLA_LAYOUT_WORDS = ("fp8_ds_mla",)


def _sparse_mla_bytes(ctx: SpecContext, width: int, sparse: bool, notes: list[str]) -> int:
    """Bytes per token of the MLA latent: width × dtype, ``fp8_ds_mla`` 656 B (FLASHMLA_SPARSE), for DSA with a
    quantized KV cache by ``sparse_mla_format`` / ``sm_major`` (10 -> ``fp8``, FLASHINFER_MLA_SPARSE)."""
    main = width * ctx.dtype_bytes
    if sparse and ctx.dtype_bytes == 1:
        fmt = ctx.sparse_mla_format or ("fp8" if ctx.sm_major == 10 else "fp8_ds_mla")
        if fmt in _DS_MLA_LAYOUT_WORDS or ctx.resolved_kv_dtype in _DS_MLA_LAYOUT_WORDS:
            main = 656
        notes.append(f"sparse MLA cache format {'fp8_ds_mla (656 B)' if main == 656 else 'standard fp8 (576 B)'}")
    elif ctx.resolved_kv_dtype in _DS_MLA_LAYOUT_WORDS:
        main = 656
    return main


def _latent_layers(cfg: Mapping[str, Any], ctx: SpecContext, *, indexer: bool) -> ModelKV:
    """One latent per layer on every rank, plus (``indexer``) the DSA indexer keys on the indexer layers and on
    every draft layer."""
    width = req_int(cfg, "kv_lora_rank") + req_int(cfg, "qk_rope_head_dim")
    if width <= 0:
        raise bad_field("kv_lora_rank", "and qk_rope_head_dim give the MLA latent no width")
    notes: list[str] = []
    main = _sparse_mla_bytes(ctx, width, indexer, notes)
    idx_layers = set(dsa_indexer_layers(cfg)) if indexer else set()
    ihd = req_int(cfg, "index_head_dim", 128) if indexer else 0
    idx_bytes = ihd + ihd // 128 * 4
    n = ctx.num_layers
    kda, kda_bytes = _kda_layers(cfg, ctx)
    layers: list[LayerKV] = []
    for i in range(n + ctx.num_draft_layers):
        if i in kda:
            layers.append(LayerKV(f"l{i}.kda", "mamba", i, state_bytes=kda_bytes))
            continue
        layers.append(LayerKV(f"l{i}.attn", "mla", i, token_bytes=main))
        if indexer and (i in idx_layers or i >= n):
            layers.append(LayerKV(f"l{i}.indexer", "indexer", i, token_bytes=idx_bytes))
    if kda:
        notes.append(
            f"{len(kda)} KDA (linear-attention) layers priced as Mamba state pages; the model class has no "
            "SupportsMambaPrefixCaching (0.11: prefix caching off)"
        )
    lac = cfg.get("linear_attn_config")
    mixer = kda_mixer(lac, sm_major=ctx.sm_major) if kda and isinstance(lac, Mapping) else None
    return ModelKV(
        tuple(layers),
        n,
        ctx.family,
        main,
        tuple(notes),
        mamba_prefix_caching=not kda,
        qk_nope_head_dim=int_if_set(cfg, "qk_nope_head_dim") or None,
        state_mixer=mixer,
    )


def _kda_layers(cfg: Mapping[str, Any], ctx: SpecContext) -> tuple[frozenset[int], int]:
    """Kimi-Linear's KDA layers (0-based; ``linear_attn_config.kda_layers`` is 1-based) and the bytes of one KDA
    state per rank (``MambaStateShapeCalculator.kda_state_shape``, ``layers/mamba/mamba_utils.py``, v0.11.1)::

        conv q, k, v: 3 × (K − 1) × H·D/tp × model dtype;   recurrent: H/tp × D × D × 4 (fp32)

    Example: Kimi-Linear-48B-A3B TP2 (32 heads × 128, K 4): 3 × 3 × 2,048 × 2 + 16 × 128 × 128 × 4
    = 36,864 + 1,048,576 = 1,085,440 B."""
    lac = cfg.get("linear_attn_config")
    if lac is None:
        return frozenset(), 0
    if not isinstance(lac, Mapping):
        raise bad_field("linear_attn_config", "must be an object")
    layers = int_list(lac, "kda_layers") or []
    if any(x < 1 or x > ctx.num_layers for x in layers):
        raise bad_field("linear_attn_config.kda_layers", f"must hold 1-based layer numbers ≤ {ctx.num_layers}")
    heads = req_int(lac, "num_heads", minimum=1)
    hd = req_int(lac, "head_dim", minimum=1)
    kern = req_int(lac, "short_conv_kernel_size", 4, minimum=1)
    tp = ctx.tp_size
    conv = 3 * (kern - 1) * (heads * hd // tp) * model_dtype_bytes(cfg)
    recurrent = (heads // tp) * hd * hd * 4
    return frozenset(x - 1 for x in layers), conv + recurrent


def build_mla(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
    """MLA: one ``kv_lora_rank + qk_rope_head_dim`` latent per layer, not split by TP.
    Example: Kimi-K2 TP8 bf16: (512 + 64) × 2 = 1,152 B per token per layer on every rank."""
    return _latent_layers(cfg, ctx, indexer=False)


def build_dsa(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
    """DSA: the MLA latent plus the indexer keys (``index_head_dim + index_head_dim // 128 × 4`` B) on the layers
    whose indexer is not skipped.  Example: GLM-5.2 TP4 fp8 on SM100: 78 × 576 + 21 × 132 = 47,700 B per token."""
    return _latent_layers(cfg, ctx, indexer=True)


def _dsv4_layer(i: int, r: int, hd: int, ihd: int, window: int, slot: int) -> list[LayerKV]:
    """One DeepSeek-V4 layer: its SWA ring, and for compress ratio r > 1 the compressed latent and its state
    (r == 4 adds the indexer keys and their state)."""
    out = [LayerKV(f"l{i}.swa", "dsv4_swa", i, token_bytes=slot, window=window, block_size=64, alignment=576)]
    if r <= 1:
        return out
    coff = 2 if r == 4 else 1
    out += [
        LayerKV(f"l{i}.ckv", "dsv4_c", i, token_bytes=slot, block_size=256, tokens_per_state=r, alignment=576),
        LayerKV(
            f"l{i}.cstate",
            "dsv4_state",
            i,
            token_bytes=2 * coff * hd * 4,
            window=coff * r,
            block_size=4 if r == 4 else 8,
            alignment=576,
        ),
    ]
    if r == 4:
        out += [
            LayerKV(
                f"l{i}.idx",
                "dsv4_c",
                i,
                token_bytes=ihd + ihd // 128 * 4,
                block_size=256,
                tokens_per_state=4,
                alignment=576,
            ),
            LayerKV(
                f"l{i}.idxstate", "dsv4_state", i, token_bytes=2 * 2 * ihd * 4, window=8, block_size=4, alignment=576
            ),
        ]
    return out


def build_dsv4(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
    """DeepSeek-V4 caches in the default ``fp8_ds_mla`` layout (584 B slots), per the
    reference notes §5.3 read from ``models/deepseek_v4/attention.py`` and
    ``v1/attention/backends/mla/sparse_swa.py`` (v0.33.0).  Not validated against a pool size.
    Example: a ratio-4 layer holds an SWA ring (64 × 584 B, aligned to 576), the compressed latent
    (256 / 4 × 584 B), its state, the indexer keys and their state."""
    n = ctx.num_layers
    ratios = (int_list(cfg, "compress_ratios") or [])[:n]
    ihd = int_if_set(cfg, "index_head_dim", 128)
    hd = int_if_set(cfg, "head_dim", 512)
    window = int_if_set(cfg, "sliding_window", 128)
    slot = 584
    layers: list[LayerKV] = []
    for i in range(n + ctx.num_draft_layers):
        layers += _dsv4_layer(i, ratios[i] if i < len(ratios) else 0, hd, ihd, window, slot)
    notes = ("DeepSeek-V4 layout from reading the code only (fp8_ds_mla, 584 B slots)",)
    return ModelKV(tuple(layers), n, Family.DSV4, slot, notes, token_bytes_add_up=False)


def _lazy_builder(path: str) -> SpecBuilder:
    """The builder a :class:`~kvplan.family.FamilySpec` names (``"module:function"``), imported on first call."""

    def build(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
        builder: SpecBuilder = resolve(path)
        return builder(cfg, ctx)

    return build


#: the spec builder of each family (``FamilySpec.vllm_spec``; the family comes from
#: :func:`kvplan.hfconfig.detect.vllm_family`)
SPEC_BUILDERS: dict[Family, SpecBuilder] = {f: _lazy_builder(s.vllm_spec) for f, s in FAMILY_SPECS.items()}


def build_model_kv(
    *,
    config: Mapping[str, Any],
    tp_size: int,
    kv_cache_dtype: str = "auto",
    sm_major: int | None = None,
    sparse_mla_format: str | None = None,
    mamba_ssm_cache_dtype: str = "auto",
    num_draft_layers: int = 0,
    chunked_local_hybrid: bool = True,
    sliding_hybrid: bool = True,
    kv_cache_dtype_skip_layers: tuple[str, ...] = (),
) -> ModelKV:
    """Per-rank KV tensors of every layer, vLLM style: normalise the config, resolve the KV dtype, pick the
    family's builder from :data:`SPEC_BUILDERS`.

    ``sparse_mla_format`` (DSA models with a quantized KV cache): ``fp8_ds_mla`` (656 B,
    FLASHMLA_SPARSE) or ``fp8`` (576 B, FLASHINFER_MLA_SPARSE, the SM100 default for fp8
    KV per ``platforms/cuda.py`` ``_get_backend_priorities``).  None = by ``sm_major``
    (10 -> ``fp8``; otherwise ``fp8_ds_mla``).  ``chunked_local_hybrid``: the release keeps chunked-local
    layers as their own spec (≥0.14); ``kv_cache_dtype_skip_layers``: layers kept at the model dtype.
    """
    cfg = flatten_config(config, engine="vllm")
    n = num_layers(cfg)
    kvd = resolve_kv_cache_dtype(cfg, kv_cache_dtype, sm_major)
    b = model_dtype_bytes(cfg) if kvd == "auto" else kv_dtype_bytes(kvd)
    family = vllm_family(cfg)
    ctx = SpecContext(
        num_layers=n,
        tp_size=tp_size,
        kv_cache_dtype=kv_cache_dtype,
        resolved_kv_dtype=kvd,
        dtype_bytes=b,
        sm_major=sm_major,
        sparse_mla_format=sparse_mla_format,
        mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
        num_draft_layers=num_draft_layers,
        family=family,
        chunked_local_hybrid=chunked_local_hybrid,
        sliding_hybrid=sliding_hybrid,
        skip_layers=tuple(kv_cache_dtype_skip_layers),
    )
    model = replace(SPEC_BUILDERS[family](cfg, ctx), kv_dtype_bytes=b, kv_dtype=kvd)
    if kvd != kv_cache_dtype:
        return replace(model, notes=(f"kv_cache_dtype auto resolved to {kvd}", *model.notes))
    return model

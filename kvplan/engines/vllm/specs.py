"""vLLM per-layer KV-cache specs, read from a Hugging Face ``config.json`` dict.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError

DTYPE_BYTES = {
    "auto": None, "bfloat16": 2, "float16": 2, "half": 2, "bf16": 2, "fp16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "float32": 4, "fp32": 4,
    "fp8_ds_mla": 1,
}

MLA_MODEL_TYPES = frozenset({
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp", "kimi_k2", "kimi_linear",
    "glm_moe_dsa", "longcat_flash", "pangu_ultra_moe", "mistral_large_3",
})


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
    layer: int                      # decoder-layer index (for PP placement)
    token_bytes: int = 0
    state_bytes: int = 0
    window: int | None = None       # sliding window / chunk size
    block_size: int | None = None   # fixed block size (DSv4 caches); None = the model's
    tokens_per_state: int = 1
    alignment: int = 1              # page rounded up to a multiple of this

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
    family: str                     # dense | mla | dsa | hybrid_mamba | dsv4
    attn_token_bytes_1layer: int    # one attention layer's bytes/token (hybrid block unification)
    default_block_size: int
    notes: tuple[str, ...] = field(default_factory=tuple)


def text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Geometry dict: the top level overlaid with ``text_config`` (vLLM's ``hf_text_config``)."""
    if not isinstance(config, Mapping):
        raise InputError("config must be a JSON object", field="config")
    out = dict(config)
    tc = config.get("text_config")
    if isinstance(tc, Mapping):
        out.update(tc)
    return out


def model_dtype_bytes(cfg: Mapping[str, Any]) -> int:
    """Bytes of the model dtype: 2.  vLLM serves fp32 checkpoints in 16-bit by default
    (``vllm/config/model.py`` ``_get_and_verify_dtype`` downcasts float32)."""
    return 2


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
    b = DTYPE_BYTES.get(kv_cache_dtype)
    if b is None:
        raise InputError(f"unsupported kv_cache_dtype '{kv_cache_dtype}'", field="kv_cache_dtype",
                         hint="use auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2 or fp8_ds_mla")
    return b


def _int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    v = cfg.get(key, default)
    if v is None:
        raise InputError(f"config has no '{key}'", field="config", hint="pass the model's config.json")
    return int(v)


def head_dim(cfg: Mapping[str, Any]) -> int:
    hd = cfg.get("head_dim")
    if hd:
        return int(hd)
    return _int(cfg, "hidden_size") // _int(cfg, "num_attention_heads")


def kv_heads_per_rank(total_kv_heads: int, tp: int) -> int:
    """``max(1, kv_heads // tp)`` (``ModelConfig.get_num_kv_heads``, v0.33.0)."""
    return max(1, total_kv_heads // tp)


def is_mla(cfg: Mapping[str, Any]) -> bool:
    return cfg.get("kv_lora_rank") is not None and (
        cfg.get("model_type") in MLA_MODEL_TYPES or cfg.get("qk_rope_head_dim") is not None)


def dsa_indexer_layers(cfg: Mapping[str, Any]) -> list[int]:
    """Layers that own an indexer K cache (``DeepseekV2MLAAttention.__init__``, v0.33.0):
    skipped when ``max(i - offset + 1, 0) % freq != 0`` (or pattern[i] == "S")."""
    n = _int(cfg, "num_hidden_layers")
    freq = int(cfg.get("index_topk_freq") or 1)
    offset = int(cfg.get("index_skip_topk_offset", 2) if cfg.get("index_skip_topk_offset") is not None else 2)
    pattern = cfg.get("index_topk_pattern")
    out = []
    for i in range(n):
        if pattern is not None and 0 <= i < len(pattern):
            skip = pattern[i] == "S"
        else:
            skip = max(i - offset + 1, 0) % freq != 0
        if not skip:
            out.append(i)
    return out


def _layer_kinds(cfg: Mapping[str, Any]) -> list[str]:
    """Per decoder layer: ``full``, ``swa``, ``chunked``, ``mamba`` (Mamba2), ``gdn`` or ``none``."""
    n = _int(cfg, "num_hidden_layers")
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return [{"M": "mamba", "*": "full"}.get(c, "none") for c in pattern]
    lt = cfg.get("layer_types")
    if isinstance(lt, list) and lt:
        m = {"full_attention": "full", "sliding_attention": "swa", "linear_attention": "gdn",
             "chunked_attention": "chunked", "attention": "full", "mamba": "mamba",
             "deepseek_sparse_attention": "full"}
        kinds = [m.get(t, "full") for t in lt[:n]]
        if cfg.get("sliding_window") is None:
            kinds = ["full" if k == "swa" else k for k in kinds]
        return kinds
    if cfg.get("full_attention_interval") and cfg.get("linear_num_value_heads"):
        k = int(cfg["full_attention_interval"])
        return ["full" if (i + 1) % k == 0 else "gdn" for i in range(n)]
    if cfg.get("attention_chunk_size"):
        # Llama-4: every 4th layer is global (no RoPE), the others chunked-local.
        return ["full" if (i + 1) % 4 == 0 else "chunked" for i in range(n)]
    sw = cfg.get("sliding_window")
    if sw and cfg.get("use_sliding_window", True) is not False:
        pat = cfg.get("sliding_window_pattern")
        mt = str(cfg.get("model_type", ""))
        if pat:
            p = int(pat)
            return ["full" if (i + 1) % p == 0 else "swa" for i in range(n)]
        if mt.startswith("gemma3"):
            return ["full" if (i + 1) % 6 == 0 else "swa" for i in range(n)]
        if mt.startswith("gemma2"):
            return ["swa" if i % 2 == 0 else "full" for i in range(n)]
        if cfg.get("max_window_layers") is not None and mt.startswith("qwen"):
            mwl = int(cfg["max_window_layers"])
            return ["full" if i < mwl else "swa" for i in range(n)]
        return ["swa"] * n
    return ["full"] * n


def _mamba2_state_bytes(cfg: Mapping[str, Any], tp: int, conv_b: int, ssm_b: int) -> int:
    heads = _int(cfg, "mamba_num_heads")
    hdim = _int(cfg, "mamba_head_dim")
    inter = heads * hdim
    ngroups = _int(cfg, "n_groups", 1)
    if ngroups % tp:
        ngroups += tp - ngroups
    state = int(cfg.get("ssm_state_size") or cfg.get("mamba_d_state") or 128)
    kern = int(cfg.get("conv_kernel") or cfg.get("mamba_d_conv") or 4)
    conv = (inter + 2 * ngroups * state) // tp * (kern - 1)
    ssm = heads // tp * hdim * state
    return conv * conv_b + ssm * ssm_b


def _gdn_state_bytes(cfg: Mapping[str, Any], tp: int, conv_b: int, ssm_b: int) -> int:
    nk, nv = _int(cfg, "linear_num_key_heads"), _int(cfg, "linear_num_value_heads")
    hk, hv = _int(cfg, "linear_key_head_dim"), _int(cfg, "linear_value_head_dim")
    kern = _int(cfg, "linear_conv_kernel_dim", 4)
    conv = (hk * nk * 2 + hv * nv) // tp * (kern - 1)
    ssm = nv // tp * hv * hk
    return conv * conv_b + ssm * ssm_b


def _ssm_dtype_bytes(cfg: Mapping[str, Any], mamba_ssm_cache_dtype: str) -> int:
    """``mamba_ssm_cache_dtype``: auto = model dtype, except NemotronH (config value or
    float32, ``NemotronHForCausalLMConfig``) and Qwen3.5 (config ``mamba_ssm_dtype``)."""
    if mamba_ssm_cache_dtype != "auto":
        return kv_dtype_bytes(mamba_ssm_cache_dtype)
    mt = str(cfg.get("model_type", ""))
    if mt.startswith("nemotron_h"):
        return kv_dtype_bytes(str(cfg.get("mamba_ssm_cache_dtype") or "float32"))
    if cfg.get("mamba_ssm_dtype"):
        return kv_dtype_bytes(str(cfg["mamba_ssm_dtype"]))
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


def build_model_kv(
    *,
    config: Mapping[str, Any],
    tp_size: int,
    kv_cache_dtype: str = "auto",
    sm_major: int | None = None,
    sparse_mla_format: str | None = None,
    mamba_ssm_cache_dtype: str = "auto",
    num_draft_layers: int = 0,
) -> ModelKV:
    """Per-rank KV tensors of every layer, vLLM style.

    ``sparse_mla_format`` (DSA models with a quantized KV cache): ``fp8_ds_mla`` (656 B,
    FLASHMLA_SPARSE) or ``fp8`` (576 B, FLASHINFER_MLA_SPARSE, the SM100 default for fp8
    KV per ``platforms/cuda.py`` ``_get_backend_priorities``).  None = by ``sm_major``
    (10 -> ``fp8``; otherwise ``fp8_ds_mla``).
    """
    cfg = text_config(config)
    n = _int(cfg, "num_hidden_layers")
    kvd = resolve_kv_cache_dtype(cfg, kv_cache_dtype, sm_major)
    b = model_dtype_bytes(cfg) if kvd == "auto" else kv_dtype_bytes(kvd)
    notes: list[str] = []
    if kvd != kv_cache_dtype:
        notes.append(f"kv_cache_dtype auto resolved to {kvd}")
    layers: list[LayerKV] = []

    if cfg.get("compress_ratios") is not None or str(cfg.get("model_type", "")).startswith("deepseek_v4"):
        return _build_dsv4(cfg, n, notes, num_draft_layers)

    if is_mla(cfg):
        width = _int(cfg, "kv_lora_rank") + _int(cfg, "qk_rope_head_dim")
        dsa = cfg.get("index_topk") is not None
        main = width * b
        if dsa and b == 1:
            fmt = sparse_mla_format or ("fp8" if sm_major == 10 else "fp8_ds_mla")
            if fmt == "fp8_ds_mla" or kvd == "fp8_ds_mla":
                main = 656
            notes.append(f"sparse MLA cache format {'fp8_ds_mla (656 B)' if main == 656 else 'standard fp8 (576 B)'}")
        elif kvd == "fp8_ds_mla":
            main = 656
        idx_layers = set(dsa_indexer_layers(cfg)) if dsa else set()
        idx_bytes = 0
        if dsa:
            ihd = _int(cfg, "index_head_dim", 128)
            idx_bytes = ihd + ihd // 128 * 4
        for i in range(n + num_draft_layers):
            layers.append(LayerKV(f"l{i}.attn", "mla", i, token_bytes=main))
            if dsa and (i in idx_layers or i >= n):
                layers.append(LayerKV(f"l{i}.indexer", "indexer", i, token_bytes=idx_bytes))
        return ModelKV(tuple(layers), n, "dsa" if dsa else "mla", main, 64, tuple(notes))

    kinds = _layer_kinds(cfg)
    hd = head_dim(cfg)
    hd_v = int(cfg.get("v_head_dim") or hd) if cfg.get("v_head_dim") and not is_mla(cfg) else hd
    kvh = int(cfg.get("num_key_value_heads") or _int(cfg, "num_attention_heads"))
    per_tok = kv_heads_per_rank(kvh, tp_size) * (hd + hd_v) * b
    conv_b = model_dtype_bytes(cfg)
    ssm_b = _ssm_dtype_bytes(cfg, mamba_ssm_cache_dtype)
    window = int(cfg.get("sliding_window") or 0) or None
    chunk = int(cfg.get("attention_chunk_size") or 0) or None
    for i, k in enumerate(kinds):
        if k == "full":
            layers.append(LayerKV(f"l{i}.attn", "full", i, token_bytes=per_tok))
        elif k == "swa":
            layers.append(LayerKV(f"l{i}.attn", "swa", i, token_bytes=per_tok, window=window))
        elif k == "chunked":
            # The hybrid manager is disabled for chunked-local attention unless
            # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (config/vllm.py), so these
            # layers are promoted to full attention for allocation (unify_hybrid_kv_cache_specs).
            layers.append(LayerKV(f"l{i}.attn", "full", i, token_bytes=per_tok))
        elif k == "mamba":
            layers.append(LayerKV(f"l{i}.mamba", "mamba", i, state_bytes=_mamba2_state_bytes(cfg, tp_size, conv_b, ssm_b)))
        elif k == "gdn":
            layers.append(LayerKV(f"l{i}.gdn", "mamba", i, state_bytes=_gdn_state_bytes(cfg, tp_size, conv_b, ssm_b)))
    if "chunked" in kinds:
        notes.append("chunked-local layers allocated as full attention (hybrid KV manager disabled)")
    family = "hybrid_mamba" if any(lay.kind == "mamba" for lay in layers) else "dense"
    return ModelKV(tuple(layers), n, family, per_tok, 16, tuple(notes))


def _build_dsv4(cfg: Mapping[str, Any], n: int, notes: list[str], num_draft_layers: int) -> ModelKV:
    """DeepSeek-V4 caches in the default ``fp8_ds_mla`` layout (584 B slots), per the
    reference notes §5.3 read from ``models/deepseek_v4/attention.py`` and
    ``v1/attention/backends/mla/sparse_swa.py`` (v0.33.0).  Not validated against a pool size."""
    ratios = list(cfg.get("compress_ratios") or [])[:n]
    ihd = int(cfg.get("index_head_dim") or 128)
    hd = int(cfg.get("head_dim") or 512)
    window = int(cfg.get("sliding_window") or 128)
    slot = 584
    layers: list[LayerKV] = []
    for i in range(n + num_draft_layers):
        r = int(ratios[i]) if i < len(ratios) else 0
        layers.append(LayerKV(f"l{i}.swa", "dsv4_swa", i, token_bytes=slot, window=window,
                              block_size=64, alignment=576))
        if r > 1:
            layers.append(LayerKV(f"l{i}.ckv", "dsv4_c", i, token_bytes=slot, block_size=256,
                                  tokens_per_state=r, alignment=576))
            coff = 2 if r == 4 else 1
            layers.append(LayerKV(f"l{i}.cstate", "dsv4_state", i, token_bytes=2 * coff * hd * 4,
                                  window=coff * r, block_size=4 if r == 4 else 8, alignment=576))
            if r == 4:
                layers.append(LayerKV(f"l{i}.idx", "dsv4_c", i, token_bytes=ihd + ihd // 128 * 4,
                                      block_size=256, tokens_per_state=4, alignment=576))
                layers.append(LayerKV(f"l{i}.idxstate", "dsv4_state", i, token_bytes=2 * 2 * ihd * 4,
                                      window=8, block_size=4, alignment=576))
    notes.append("DeepSeek-V4 layout from reading the code only (fp8_ds_mla, 584 B slots)")
    return ModelKV(tuple(layers), n, "dsv4", slot, 256, tuple(notes))

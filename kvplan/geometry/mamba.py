"""Mamba / linear-attention hybrids (Qwen3-Next, Qwen3.5/3.6/3.8, Nemotron-H, Granite-4 hybrid, Falcon-H1,
Kimi-Linear) as SGLang 0.5.23 sizes them.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError

GIB = 1 << 30

_DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}

#: ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` (kv_cache_configurator.py).
MAMBA_BASE_RATIO = 3

#: ``_MAMBA_EXTRA_BUFFER_ARCHS`` (arg_groups/overrides.py, v0.5.23), the hybrids kvplan reads.
EXTRA_BUFFER_ARCHS = frozenset({
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM", "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "InternS2PreviewForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
})

_GDN_TYPES = {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
_GDN_ARCHS = {"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
              "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"}


# --------------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MambaGeometry:
    """What SGLang needs to size a linear-attention hybrid (global, before TP).

    ``kind``: ``"mamba2"`` (Nemotron-H, Granite-4 hybrid, Falcon-H1), ``"gdn"`` (Qwen3-Next, Qwen3.5 ...,
    stored through the same Mamba2 state shape) or ``"kda"`` (Kimi-Linear). For mamba2/gdn the fields are
    the arguments of ``Mamba2StateShape.create``; for kda ``num_heads`` / ``head_dim`` / ``conv_kernel``.
    ``attention_*`` describe the attention layers' KV (``attention_kind`` "gqa" or "mla").
    ``config_ssm_dtype`` is the config's ``mamba_ssm_dtype`` when the model class reads it, else None.
    """

    kind: str
    architecture: str
    num_hidden_layers: int
    attention_layers: tuple[int, ...]
    linear_layers: tuple[int, ...]
    intermediate_size: int
    n_groups: int
    num_heads: int
    head_dim: int
    state_size: int
    conv_kernel: int
    config_ssm_dtype: str | None
    attention_kind: str = "gqa"
    num_kv_heads: int = 0
    attn_head_dim: int = 0
    attn_v_head_dim: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    notes: tuple[str, ...] = ()

    def attention_layers_in(self, stage_layers: tuple[int, int] | None) -> int:
        if stage_layers is None:
            return len(self.attention_layers)
        s, e = stage_layers
        return sum(s <= i < e for i in self.attention_layers)


def _flat(cfg: Mapping[str, Any]) -> dict[str, Any]:
    from kvplan.hfconfig.spec import flatten_config

    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    return flatten_config(cfg)


def _int(c: Mapping[str, Any], key: str, default: int | None = None, *, notes: list[str] | None = None) -> int:
    v = c.get(key)
    if v is None:
        if default is None:
            raise InputError(f"model config has no '{key}'", field=key,
                             hint="the linear-attention state size needs it; pass a complete config.json")
        if notes is not None:
            notes.append(f"{key} absent: SGLang's config-class default {default}")
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise InputError(f"config field '{key}' must be a positive integer, got {v!r}", field=key)
    return v


def _attn_geometry(c: Mapping[str, Any]) -> dict[str, int]:
    heads = _int(c, "num_attention_heads")
    kv = c.get("num_key_value_heads")
    kv = heads if kv is None else _int(c, "num_key_value_heads")
    hd = c.get("head_dim")
    hd = _int(c, "head_dim") if hd is not None else _int(c, "hidden_size") // heads
    vhd = c.get("v_head_dim") or hd
    return {"num_kv_heads": kv, "attn_head_dim": hd, "attn_v_head_dim": int(vhd)}


def mamba_geometry_from_config(cfg: Mapping[str, Any]) -> MambaGeometry:
    """Read the linear-attention state geometry and the attention layer ids of a hybrid config.

    * Qwen3-Next / Qwen3.5 (``Qwen3NextConfig.layers_block_type``): layer ``l`` is full attention iff
      ``(l + 1) % full_attention_interval == 0`` -- SGLang ignores ``layer_types`` here. GDN state as a
      Mamba2 shape: ``intermediate = linear_value_head_dim * linear_num_value_heads``,
      ``n_groups = linear_num_key_heads``, ``num_heads = linear_num_value_heads``,
      ``head_dim = linear_value_head_dim``, ``state = linear_key_head_dim``,
      ``conv_kernel = linear_conv_kernel_dim``; ssm dtype from ``mamba_ssm_dtype``.
    * Nemotron-H: ``hybrid_override_pattern`` / ``layers_block_type`` (``M`` mamba, ``*`` attention,
      ``-`` MLP, ``E`` MoE); ``num_hidden_layers = len(pattern)`` (MLP/MoE entries count as layers);
      ``intermediate = mamba_num_heads * mamba_head_dim``, ``n_groups = n_groups``,
      ``state = ssm_state_size``, ``conv_kernel = conv_kernel``; ``mamba_ssm_dtype`` (not
      ``mamba_ssm_cache_dtype``).
    * Granite-4 hybrid (``granitemoehybrid``): ``layer_types`` (``mamba``/``attention``, transformers-5
      aliases ``linear_attention``/``full_attention``), default every 6th layer attention;
      ``intermediate = mamba_expand * hidden_size``; ssm dtype always fp32 (the class passes none).
    * Falcon-H1: every layer is both attention and Mamba2; ``intermediate = mamba_d_ssm`` (1024 when absent)
      or ``mamba_expand * hidden_size`` when null; ``mamba_d_head = "auto"`` -> intermediate // heads.
    * Kimi-Linear: ``linear_attn_config`` (``kda_layers`` 1-based, ``num_heads``, ``head_dim``,
      ``short_conv_kernel_size``); the other layers are MLA.

    Example (tests/data/shared/reference/models.json, Qwen3-Next-80B-A3B): 48 layers, interval 4 ->
    12 attention + 36 GDN layers; 16 key / 32 value heads of 128, conv 4.

    Source: sgl-project/sglang python/sglang/srt/configs/qwen3_next.py ``Qwen3NextConfig.mamba2_cache_params``,
    nemotron_h.py, granitemoehybrid.py, falcon_h1.py, kimi_linear.py; hybrid_arch.py ``mambaish_config``, v0.5.23.
    """
    c = _flat(cfg)
    archs = list(c.get("architectures") or [])
    arch = archs[0] if archs else ""
    mt = str(c.get("model_type") or "")
    notes: list[str] = []
    attn = {}
    ssm_cfg = c.get("mamba_ssm_dtype")

    if set(archs) & _GDN_ARCHS or mt in _GDN_TYPES:
        n = _int(c, "num_hidden_layers")
        interval = c.get("full_attention_interval")
        if interval is None:
            raise InputError("Qwen3-Next/Qwen3.5 config has no 'full_attention_interval'", field="full_attention_interval",
                             hint="SGLang derives the full/linear split from it (layer_types is not read)")
        interval = _int(c, "full_attention_interval")
        full = tuple(i for i in range(n) if (i + 1) % interval == 0)
        lin = tuple(i for i in range(n) if (i + 1) % interval != 0)
        lt = c.get("layer_types")
        if isinstance(lt, list) and tuple(i for i, t in enumerate(lt) if t == "full_attention") != full:
            notes.append("layer_types disagrees with full_attention_interval; SGLang uses the interval")
        nk = _int(c, "linear_num_key_heads", 16, notes=notes)
        nv = _int(c, "linear_num_value_heads", 32, notes=notes)
        dk = _int(c, "linear_key_head_dim", 128, notes=notes)
        dv = _int(c, "linear_value_head_dim", 128, notes=notes)
        conv = _int(c, "linear_conv_kernel_dim", 4, notes=notes)
        attn = _attn_geometry(c)
        return MambaGeometry(kind="gdn", architecture=arch or mt, num_hidden_layers=n, attention_layers=full,
                             linear_layers=lin, intermediate_size=dv * nv, n_groups=nk, num_heads=nv, head_dim=dv,
                             state_size=dk, conv_kernel=conv, config_ssm_dtype=ssm_cfg, notes=tuple(notes), **attn)

    if mt == "nemotron_h" or "NemotronHForCausalLM" in archs:
        lbt = c.get("layers_block_type")
        if isinstance(lbt, list) and lbt:
            pat = "".join({"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}.get(t, "?") for t in lbt)
        else:
            pat = c.get("hybrid_override_pattern")
        if not isinstance(pat, str) or not pat or set(pat) - set("M*-E"):
            raise InputError("Nemotron-H config needs 'hybrid_override_pattern' (M, *, -, E) or 'layers_block_type'",
                             field="hybrid_override_pattern")
        n = len(pat)
        if c.get("num_hidden_layers") not in (None, n):
            notes.append(f"num_hidden_layers {c.get('num_hidden_layers')} ignored: SGLang uses the pattern length {n}")
        heads = _int(c, "mamba_num_heads", 128, notes=notes)
        hd = _int(c, "mamba_head_dim", 64, notes=notes)
        if c.get("n_groups") is not None:
            groups = _int(c, "n_groups")
        else:
            groups = _int(c, "mamba_n_groups", 8, notes=notes)
        conv = _int(c, "conv_kernel") if c.get("conv_kernel") is not None else _int(c, "mamba_d_conv", 4, notes=notes)
        attn = _attn_geometry(c)
        return MambaGeometry(kind="mamba2", architecture=arch or mt, num_hidden_layers=n,
                             attention_layers=tuple(i for i, ch in enumerate(pat) if ch == "*"),
                             linear_layers=tuple(i for i, ch in enumerate(pat) if ch == "M"),
                             intermediate_size=heads * hd, n_groups=groups, num_heads=heads, head_dim=hd,
                             state_size=_int(c, "ssm_state_size", 128, notes=notes), conv_kernel=conv,
                             config_ssm_dtype=ssm_cfg, notes=tuple(notes), **attn)

    if mt == "granitemoehybrid" or "GraniteMoeHybridForCausalLM" in archs:
        n = _int(c, "num_hidden_layers")
        lt = c.get("layer_types")
        if lt is None:
            lt = ["attention" if (i + 1) % 6 == 0 else "mamba" for i in range(n)]
        alias = {"linear_attention": "mamba", "full_attention": "attention"}
        lt = [alias.get(t, t) for t in lt] if isinstance(lt, list) else lt
        if not isinstance(lt, list) or len(lt) != n or set(lt) - {"mamba", "attention"}:
            raise InputError("Granite hybrid 'layer_types' must list 'mamba'/'attention' for every layer",
                             field="layer_types")
        lin = tuple(i for i, t in enumerate(lt) if t == "mamba")
        if not lin:
            raise InputError("this Granite hybrid config has no mamba layer: SGLang sizes it as a plain GQA model",
                             field="layer_types")
        heads = _int(c, "mamba_n_heads", 64, notes=notes)
        inter = _int(c, "mamba_expand", 2, notes=notes) * _int(c, "hidden_size")
        attn = _attn_geometry(c)
        if ssm_cfg is not None:
            notes.append("mamba_ssm_dtype in the config is ignored for Granite hybrids (fp32 unless --mamba-ssm-dtype)")
        return MambaGeometry(kind="mamba2", architecture=arch or mt, num_hidden_layers=n,
                             attention_layers=tuple(i for i, t in enumerate(lt) if t == "attention"), linear_layers=lin,
                             intermediate_size=inter, n_groups=_int(c, "mamba_n_groups", 1, notes=notes),
                             num_heads=heads, head_dim=_int(c, "mamba_d_head", 64, notes=notes),
                             state_size=_int(c, "mamba_d_state", 128, notes=notes),
                             conv_kernel=_int(c, "mamba_d_conv", 4, notes=notes), config_ssm_dtype=None,
                             notes=tuple(notes), **attn)

    if mt == "falcon_h1" or "FalconH1ForCausalLM" in archs:
        n = _int(c, "num_hidden_layers")
        if "mamba_d_ssm" not in c:
            inter = 1024
            notes.append("mamba_d_ssm absent: FalconH1Config default 1024")
        elif c.get("mamba_d_ssm") is None:
            inter = _int(c, "mamba_expand", 2, notes=notes) * _int(c, "hidden_size")
        else:
            inter = _int(c, "mamba_d_ssm")
        heads = _int(c, "mamba_n_heads", 128, notes=notes)
        hd_raw = c.get("mamba_d_head", "auto")
        hd = inter // heads if hd_raw in (None, "auto") else _int(c, "mamba_d_head")
        attn = _attn_geometry(c)
        return MambaGeometry(kind="mamba2", architecture=arch or mt, num_hidden_layers=n,
                             attention_layers=tuple(range(n)), linear_layers=tuple(range(n)), intermediate_size=inter,
                             n_groups=_int(c, "mamba_n_groups", 1, notes=notes), num_heads=heads, head_dim=hd,
                             state_size=_int(c, "mamba_d_state", 256, notes=notes),
                             conv_kernel=_int(c, "mamba_d_conv", 4, notes=notes), config_ssm_dtype=ssm_cfg,
                             notes=tuple(notes), **attn)

    if mt == "kimi_linear" or "KimiLinearForCausalLM" in archs:
        n = _int(c, "num_hidden_layers")
        la = c.get("linear_attn_config")
        if not isinstance(la, Mapping) or not isinstance(la.get("kda_layers"), list):
            raise InputError("Kimi-Linear config needs 'linear_attn_config' with 'kda_layers'", field="linear_attn_config")
        kda = set(la["kda_layers"])
        heads, hd = _int(la, "num_heads"), _int(la, "head_dim")
        conv = _int(la, "short_conv_kernel_size", 4, notes=notes)
        return MambaGeometry(kind="kda", architecture=arch or mt, num_hidden_layers=n,
                             attention_layers=tuple(i for i in range(n) if i + 1 not in kda),
                             linear_layers=tuple(i for i in range(n) if i + 1 in kda), intermediate_size=heads * hd,
                             n_groups=heads, num_heads=heads, head_dim=hd, state_size=hd, conv_kernel=conv,
                             config_ssm_dtype=None, attention_kind="mla",
                             kv_lora_rank=_int(c, "kv_lora_rank"), qk_rope_head_dim=_int(c, "qk_rope_head_dim"),
                             notes=tuple(notes))

    raise InputError(f"{arch or mt or 'this model'}: kvplan reads the linear-attention state of Qwen3-Next/Qwen3.5, "
                     "Nemotron-H, Granite-4 hybrid, Falcon-H1 and Kimi-Linear only", field="--model")


# --------------------------------------------------------------------------------------------------
# State bytes
# --------------------------------------------------------------------------------------------------


def _dtype_bytes(name: str, field: str) -> int:
    key = str(name).strip().lower()
    if key not in _DTYPE_BYTES:
        raise InputError(f"unknown Mamba state dtype {name!r}", field=field, hint="float32, bfloat16 or float16")
    return _DTYPE_BYTES[key]


def mamba_state_dtypes(*, geometry: MambaGeometry, ssm_dtype: str | None = None,
                       conv_dtype: str = "bfloat16") -> tuple[int, int]:
    """``(conv_bytes, ssm_bytes)`` per element. SSM: ``--mamba-ssm-dtype`` (env ``SGLANG_MAMBA_SSM_DTYPE``)
    > the config's ``mamba_ssm_dtype`` (only for classes that pass it) > float32; an unknown config value
    falls back to float32 (SGLang warns). Conv: ``SGLANG_MAMBA_CONV_DTYPE`` (bfloat16).

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py ``mamba2_state_dtype``, v0.5.23.
    """
    conv_b = _dtype_bytes(conv_dtype, "SGLANG_MAMBA_CONV_DTYPE")
    if ssm_dtype is not None:
        return conv_b, _dtype_bytes(ssm_dtype, "--mamba-ssm-dtype")
    cfg = geometry.config_ssm_dtype
    if cfg in ("float32", "bfloat16", "float16"):
        return conv_b, _DTYPE_BYTES[cfg]
    return conv_b, 4


def mamba_state_shapes(*, geometry: MambaGeometry, tp_size: int) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """Per-layer ``(conv_shape, ssm_shape)`` one request holds on one (linear-attention) TP rank.

    Mamba2 / GDN: groups are padded up to ``tp`` when ``n_groups % tp != 0`` (``+ tp - n_groups``), then
    ``conv_dim = intermediate + 2 * n_groups' * state``; ``conv = (conv_dim / tp, conv_kernel - 1)``,
    ``ssm = (num_heads / tp, head_dim, state)`` (``divide`` asserts exact division). KDA:
    ``conv = (conv_kernel - 1, 3 * heads * head_dim / tp)``, ``ssm = (heads / tp, head_dim, head_dim)``.
    ``tp_size`` is the attention-TP size (the TP group under CP-TP group sharing).

    Example: Qwen3-Next at TP2 -> conv (4096, 3), ssm (16, 128, 128).

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py ``Mamba2StateShape.create``,
    ``KimiLinearStateShape.create``, ``extra_groups_for_head_shards``, v0.5.23.
    """
    g = geometry
    if isinstance(tp_size, bool) or not isinstance(tp_size, int) or tp_size <= 0:
        raise InputError(f"tp_size must be a positive integer, got {tp_size!r}", field="--tp-size")

    def div(a: int, what: str) -> int:
        if a % tp_size:
            raise InputError(f"{what} {a} is not divisible by attention-TP {tp_size}", field="--tp-size",
                             hint="SGLang's linear-attention state shape asserts an exact split")
        return a // tp_size

    if g.kind == "kda":
        proj = g.num_heads * g.head_dim
        return (g.conv_kernel - 1, div(proj, "KDA projection size") * 3), \
            (div(g.num_heads, "KDA heads"), g.head_dim, g.head_dim)
    groups = g.n_groups
    if groups % tp_size:
        groups += tp_size - groups
    conv_dim = g.intermediate_size + 2 * groups * g.state_size
    return (div(conv_dim, "conv_dim"), g.conv_kernel - 1), (div(g.num_heads, "linear-attention heads"),
                                                           g.head_dim, g.state_size)


def mamba_state_bytes_per_layer(*, geometry: MambaGeometry, tp_size: int, ssm_dtype: str | None = None) -> int:
    """Bytes of one request's state in one linear layer: ``prod(conv) * conv_b + prod(ssm) * ssm_b``.

    Example: Qwen3-Next TP2, fp32 ssm: 4096 x 3 x 2 + 16 x 128 x 128 x 4 = 24,576 + 1,048,576 = 1,073,152.
    """
    (c0, c1), (s0, s1, s2) = mamba_state_shapes(geometry=geometry, tp_size=tp_size)
    conv_b, ssm_b = mamba_state_dtypes(geometry=geometry, ssm_dtype=ssm_dtype)
    return c0 * c1 * conv_b + s0 * s1 * s2 * ssm_b


def mamba_state_bytes_per_request(*, geometry: MambaGeometry, tp_size: int, ssm_dtype: str | None = None,
                                  stage_layers: tuple[int, int] | None = None, pp_size: int = 1) -> int:
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
        from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges

        ranges = pp_layer_ranges(num_layers=geometry.num_hidden_layers, pp_size=pp_size)
        most = max(sum(s <= i < e for i in lin) for s, e in ranges)
        return int(per_req * (most / len(lin)))
    return per_req


# --------------------------------------------------------------------------------------------------
# The carve
# --------------------------------------------------------------------------------------------------


def mamba_ratio(*, radix_cache: bool = True, overlap_schedule: bool = True, page_size: int = 1,
                architecture: str = "", strategy: str = "auto", skip_decode_lock: bool = False) -> int:
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
    raise InputError(f"unknown --mamba-radix-cache-strategy {strategy!r}", field="--mamba-radix-cache-strategy",
                     hint="auto, no_buffer, extra_buffer or extra_buffer_lazy")


@dataclass(frozen=True)
class MambaPools:
    """Result of :func:`mamba_carve` for one attention rank."""

    mamba_slots: int               # max_mamba_cache_size per rank (K); the pool allocates K + 1 slots
    state_bytes: int               # (K + 1) * per_request_bytes (+ speculative intermediate states)
    per_request_bytes: int
    kv_budget_bytes: int           # what is left for the attention KV pool (int(rest * 2^30))
    mamba_ratio: int
    max_running_requests_cap: int  # K // mamba_ratio
    notes: tuple[str, ...]
    mode: str = "ratio"            # "ratio" | "explicit" | "max-running-requests"
    intermediate_bytes: int = 0    # speculative intermediate SSM states

    @property
    def components(self) -> tuple[tuple[str, int], ...]:
        out = [("linear-attention state", (self.mamba_slots + 1) * self.per_request_bytes)]
        if self.intermediate_bytes:
            out.append(("speculative intermediate state", self.intermediate_bytes))
        return tuple(out)


def mamba_carve(
    *,
    geometry: MambaGeometry,
    budget_bytes: int,
    tp_size: int,
    mamba_full_memory_ratio: float = 0.9,
    max_mamba_cache_size: int | None = None,
    radix_cache: bool = True,
    max_running_requests: int | None = None,
    attn_dp_size: int = 1,
    speculative_num_draft_tokens: int = 0,
    overlap_schedule: bool = True,
    page_size: int = 1,
    ssm_dtype: str | None = None,
    pp_size: int = 1,
    mamba_radix_cache_strategy: str = "auto",
) -> MambaPools:
    """Carve the per-request state pool out of a KV budget, as ``_handle_max_mamba_cache`` does.

    ``budget_bytes`` = ``kvplan.engines.sglang.rules.budget_bytes(...)`` (the multimodal reservation already
    taken off); SGLang works in GiB floats, so ``rest = budget_bytes / 2^30``. ``p`` =
    :func:`mamba_state_bytes_per_request` (with ``pp_size``), ``r`` = ``mamba_full_memory_ratio``,
    ``D`` = speculative draft tokens, ``q`` = :func:`mamba_ratio`::

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
    if not float(mamba_full_memory_ratio) > 0.0:
        raise InputError(f"--mamba-full-memory-ratio must be positive, got {mamba_full_memory_ratio}",
                         field="--mamba-full-memory-ratio")
    if attn_dp_size <= 0:
        raise InputError(f"attn_dp_size must be positive, got {attn_dp_size}", field="--dp-size")
    p = mamba_state_bytes_per_request(geometry=geometry, tp_size=tp_size, ssm_dtype=ssm_dtype, pp_size=pp_size)
    if p <= 0:
        raise InputError("the model has no linear-attention layer", field="--model")
    q = mamba_ratio(radix_cache=radix_cache, overlap_schedule=overlap_schedule, page_size=page_size,
                    architecture=geometry.architecture, strategy=mamba_radix_cache_strategy)
    rest = budget_bytes / GIB
    spec = speculative_num_draft_tokens > 0
    if spec and max_running_requests is None:
        raise InputError("speculative decoding on a Mamba hybrid needs --max-running-requests",
                         field="--max-running-requests", hint="SGLang asserts it is set when sizing the state pool")
    notes: list[str] = []
    inter = 0
    if max_mamba_cache_size is not None:
        mode = "explicit"
        K = max_mamba_cache_size // attn_dp_size
        if spec:
            capped = min(max(1, max_running_requests // attn_dp_size), K // q)
            inter = p * (capped + 1) * speculative_num_draft_tokens
            rest -= inter / GIB
        notes.append(f"max_mamba_cache_size {K} per rank (--max-mamba-cache-size {max_mamba_cache_size})")
    elif not radix_cache and max_running_requests is not None:
        mode = "max-running-requests"
        K = max(1, max_running_requests // attn_dp_size)
        if spec:
            inter = p * (K + 1) * speculative_num_draft_tokens
            rest -= inter / GIB
        notes.append(f"max_mamba_cache_size {K} = --max-running-requests per rank (radix cache off)")
    else:
        mode = "ratio"
        r = float(mamba_full_memory_ratio)
        mb = rest * r / (1 + r) * GIB
        if spec:
            D = speculative_num_draft_tokens
            K = int((mb - p * (1 + D)) // (p * (1 + D / q)))
            capped = min(max(1, max_running_requests // attn_dp_size), K // q)
            inter = p * (capped + 1) * D
            rest -= inter / GIB
        else:
            K = int((mb - p) // p)
        notes.append(f"state pool: {K} slots (+1 padding) of {p:,} B from {r}/(1 + {r}) of the budget "
                     f"(--mamba-full-memory-ratio)")
    if K <= 0:
        raise InputError(
            f"not enough memory for the linear-attention state cache (max_mamba_cache_size={K}, "
            f"{p / 2**20:.2f} MiB per request)", field="--mem-fraction-static",
            hint="reduce --max-running-requests, raise --mem-fraction-static, or use more GPUs")
    state = (K + 1) * p
    rest -= state / GIB
    cap = K // q
    if cap <= 0:
        raise InputError(f"the state cache ({K} slots, {q} per request) cannot serve one request",
                         field="--mem-fraction-static", hint="raise --mamba-full-memory-ratio or --max-mamba-cache-size")
    notes.append(f"max_running_requests <= {K} // {q} = {cap} (mamba state slots per request: {q})")
    kv_budget = int(rest * GIB)
    if kv_budget <= 0:
        raise InputError("the linear-attention state leaves no memory for the attention KV cache",
                         field="--mem-fraction-static", hint="raise --mem-fraction-static or lower the state pool")
    return MambaPools(mamba_slots=K, state_bytes=state + inter, per_request_bytes=p, kv_budget_bytes=kv_budget,
                      mamba_ratio=q, max_running_requests_cap=cap, notes=tuple(notes), mode=mode,
                      intermediate_bytes=inter)


def mamba_hybrid_kv_cell(*, geometry: MambaGeometry, attn_tp_size: int, kv_dtype: str,
                         stage_layers: tuple[int, int] | None = None, dcp_size: int = 1) -> int:
    """Per-token KV bytes of a hybrid's *attention* layers in one PP stage (0 if the stage has none).

    GQA attention: :func:`kvplan.geometry.gqa.gqa_bytes_per_token` with ``num_layers`` = the attention layers
    inside the stage (``full_attention_layer_ids``); Kimi-Linear's MLA layers:
    :func:`kvplan.geometry.mla.mla_bytes_per_token`. Tokens are then ``page_floor(kv_budget // cell)``
    (``kvplan.engines.sglang.rules.pool_tokens`` with :attr:`MambaPools.kv_budget_bytes`).

    Examples (bf16): Qwen3-Next TP2 12 x 1 x 512 x 2 = 12,288 B; Nemotron-3-Nano TP1 6 x 2 x 256 x 2 = 6,144 B;
    Qwen3.5-27B TP1 16 x 4 x 512 x 2 = 65,536 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (mambaish ``full_attention_layer_ids`` in the stage), v0.5.23.
    """
    layers = geometry.attention_layers_in(stage_layers)
    if layers == 0:
        return 0
    if geometry.attention_kind == "mla":
        from kvplan.geometry.mla import mla_bytes_per_token

        return mla_bytes_per_token(kv_lora_rank=geometry.kv_lora_rank, qk_rope_head_dim=geometry.qk_rope_head_dim,
                                   num_layers=layers, kv_dtype=kv_dtype)
    from kvplan.geometry.gqa import gqa_bytes_per_token

    return gqa_bytes_per_token(num_kv_heads=geometry.num_kv_heads, head_dim=geometry.attn_head_dim,
                               v_head_dim=geometry.attn_v_head_dim, num_layers=layers, attn_tp_size=attn_tp_size,
                               kv_dtype=kv_dtype, dcp_size=dcp_size)

"""Mamba / linear-attention hybrid geometry (Qwen3-Next, Qwen3.5/3.6/3.8, Nemotron-H, Granite-4 hybrid, Falcon-H1,
Kimi-Linear): which layers are attention and which linear, and the per-request state shapes (engine-neutral).

Such a model has two kinds of layers: *attention* layers, which keep an ordinary per-token KV cache,
and *linear* layers (Mamba2 / Gated DeltaNet / KDA), which keep a fixed-size state per request (a
short convolution window and a recurrent SSM matrix).  How SGLang carves a pool of state slots out of the KV
budget, and in which dtypes it stores them, is :mod:`kvplan.engines.sglang.pools.mamba`.

Sources for the config reading (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/configs/mamba_utils.py``: ``Mamba2StateShape.create``, ``KimiLinearStateShape.create``,
  ``extra_groups_for_head_shards``;
* ``sglang/srt/configs/qwen3_next.py`` (Qwen3.5 inherits it through ``Qwen3_5TextConfig``),
  ``nemotron_h.py``, ``granitemoehybrid.py``, ``falcon_h1.py``, ``kimi_linear.py``: layer ids and the
  ``mamba2_cache_params`` arguments; ``sglang/srt/configs/hybrid_arch.py`` ``mambaish_config``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.normalize import Engine, flatten_config
from kvplan.hfconfig.readers import int_at_least

_GDN_TYPES = {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
_GDN_ARCHS = {
    "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM",
}


class _AttnFields(TypedDict):
    num_kv_heads: int
    attn_head_dim: int
    attn_v_head_dim: int


@dataclass(frozen=True)
class MambaGeometry:
    """What SGLang needs to size a linear-attention hybrid (global, before TP).

    ``kind``: ``"mamba2"`` (Nemotron-H, Granite-4 hybrid, Falcon-H1), ``"gdn"`` (Qwen3-Next, Qwen3.5 ...,
    stored through the same Mamba2 state shape) or ``"kda"`` (Kimi-Linear). For mamba2/gdn the fields are
    the arguments of ``Mamba2StateShape.create``; for kda ``num_heads`` / ``head_dim`` / ``conv_kernel``.
    ``attention_*`` describe the attention layers' KV (``attention_kind`` ``Family.GQA`` or ``Family.MLA``).
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
    attention_kind: Family = Family.GQA
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


def _flat(cfg: Mapping[str, Any], engine: Engine) -> dict[str, Any]:
    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    return flatten_config(cfg, engine=engine)


def _int(c: Mapping[str, Any], key: str, default: int | None = None, *, notes: list[str] | None = None) -> int:
    v = c.get(key)
    if v is None:
        if default is None:
            raise InputError(
                f"model config has no '{key}'",
                field=key,
                hint="the linear-attention state size needs it; pass a complete config.json",
            )
        if notes is not None:
            notes.append(f"{key} absent: SGLang's config-class default {default}")
        return default
    if not int_at_least(v, 1):
        raise InputError(f"config field '{key}' must be a positive integer, got {v!r}", field=key)
    return v


def _attn_geometry(c: Mapping[str, Any]) -> _AttnFields:
    heads = _int(c, "num_attention_heads")
    kv = c.get("num_key_value_heads")
    kv = heads if kv is None else _int(c, "num_key_value_heads")
    hd = c.get("head_dim")
    hd = _int(c, "head_dim") if hd is not None else _int(c, "hidden_size") // heads
    vhd = c.get("v_head_dim") or hd
    return _AttnFields(num_kv_heads=kv, attn_head_dim=hd, attn_v_head_dim=int(vhd))


def _read_gdn(c: Mapping[str, Any], arch: str, mt: str, ssm_cfg: Any) -> MambaGeometry:
    """Qwen3-Next / Qwen3.5: ``full_attention_interval`` splits the layers; GDN state as a Mamba2 shape."""
    notes: list[str] = []
    n = _int(c, "num_hidden_layers")
    interval = c.get("full_attention_interval")
    if interval is None:
        raise InputError(
            "Qwen3-Next/Qwen3.5 config has no 'full_attention_interval'",
            field="full_attention_interval",
            hint="SGLang derives the full/linear split from it (layer_types is not read)",
        )
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
    return MambaGeometry(
        kind="gdn",
        architecture=arch or mt,
        num_hidden_layers=n,
        attention_layers=full,
        linear_layers=lin,
        intermediate_size=dv * nv,
        n_groups=nk,
        num_heads=nv,
        head_dim=dv,
        state_size=dk,
        conv_kernel=conv,
        config_ssm_dtype=ssm_cfg,
        notes=tuple(notes),
        **attn,
    )


def _read_nemotron_h(c: Mapping[str, Any], arch: str, mt: str, ssm_cfg: Any) -> MambaGeometry:
    """Nemotron-H: ``hybrid_override_pattern`` / ``layers_block_type`` (M mamba, * attention)."""
    notes: list[str] = []
    lbt = c.get("layers_block_type")
    pat: Any
    if isinstance(lbt, list) and lbt:
        pat = "".join({"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}.get(t, "?") for t in lbt)
    else:
        pat = c.get("hybrid_override_pattern")
    if not isinstance(pat, str) or not pat or set(pat) - set("M*-E"):
        raise InputError(
            "Nemotron-H config needs 'hybrid_override_pattern' (M, *, -, E) or 'layers_block_type'",
            field="hybrid_override_pattern",
        )
    n = len(pat)
    if c.get("num_hidden_layers") not in (None, n):
        notes.append(f"num_hidden_layers {c.get('num_hidden_layers')} ignored: SGLang uses the pattern length {n}")
    heads = _int(c, "mamba_num_heads", 128, notes=notes)
    hd = _int(c, "mamba_head_dim", 64, notes=notes)
    groups = _int(c, "n_groups") if c.get("n_groups") is not None else _int(c, "mamba_n_groups", 8, notes=notes)
    conv = _int(c, "conv_kernel") if c.get("conv_kernel") is not None else _int(c, "mamba_d_conv", 4, notes=notes)
    attn = _attn_geometry(c)
    return MambaGeometry(
        kind="mamba2",
        architecture=arch or mt,
        num_hidden_layers=n,
        attention_layers=tuple(i for i, ch in enumerate(pat) if ch == "*"),
        linear_layers=tuple(i for i, ch in enumerate(pat) if ch == "M"),
        intermediate_size=heads * hd,
        n_groups=groups,
        num_heads=heads,
        head_dim=hd,
        state_size=_int(c, "ssm_state_size", 128, notes=notes),
        conv_kernel=conv,
        config_ssm_dtype=ssm_cfg,
        notes=tuple(notes),
        **attn,
    )


def _read_granite_hybrid(c: Mapping[str, Any], arch: str, mt: str, ssm_cfg: Any) -> MambaGeometry:
    """Granite-4 hybrid: ``layer_types`` (default every 6th layer attention); ssm dtype always fp32."""
    notes: list[str] = []
    n = _int(c, "num_hidden_layers")
    lt = c.get("layer_types")
    if lt is None:
        lt = ["attention" if (i + 1) % 6 == 0 else "mamba" for i in range(n)]
    alias = {"linear_attention": "mamba", "full_attention": "attention"}
    lt = [alias.get(t, t) for t in lt] if isinstance(lt, list) else lt
    if not isinstance(lt, list) or len(lt) != n or set(lt) - {"mamba", "attention"}:
        raise InputError(
            "Granite hybrid 'layer_types' must list 'mamba'/'attention' for every layer", field="layer_types"
        )
    lin = tuple(i for i, t in enumerate(lt) if t == "mamba")
    if not lin:
        raise InputError(
            "this Granite hybrid config has no mamba layer: SGLang sizes it as a plain GQA model", field="layer_types"
        )
    heads = _int(c, "mamba_n_heads", 64, notes=notes)
    inter = _int(c, "mamba_expand", 2, notes=notes) * _int(c, "hidden_size")
    attn = _attn_geometry(c)
    if ssm_cfg is not None:
        notes.append("mamba_ssm_dtype in the config is ignored for Granite hybrids (fp32 unless --mamba-ssm-dtype)")
    return MambaGeometry(
        kind="mamba2",
        architecture=arch or mt,
        num_hidden_layers=n,
        attention_layers=tuple(i for i, t in enumerate(lt) if t == "attention"),
        linear_layers=lin,
        intermediate_size=inter,
        n_groups=_int(c, "mamba_n_groups", 1, notes=notes),
        num_heads=heads,
        head_dim=_int(c, "mamba_d_head", 64, notes=notes),
        state_size=_int(c, "mamba_d_state", 128, notes=notes),
        conv_kernel=_int(c, "mamba_d_conv", 4, notes=notes),
        config_ssm_dtype=None,
        notes=tuple(notes),
        **attn,
    )


def _read_falcon_h1(c: Mapping[str, Any], arch: str, mt: str, ssm_cfg: Any) -> MambaGeometry:
    """Falcon-H1: every layer is both attention and Mamba2."""
    notes: list[str] = []
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
    return MambaGeometry(
        kind="mamba2",
        architecture=arch or mt,
        num_hidden_layers=n,
        attention_layers=tuple(range(n)),
        linear_layers=tuple(range(n)),
        intermediate_size=inter,
        n_groups=_int(c, "mamba_n_groups", 1, notes=notes),
        num_heads=heads,
        head_dim=hd,
        state_size=_int(c, "mamba_d_state", 256, notes=notes),
        conv_kernel=_int(c, "mamba_d_conv", 4, notes=notes),
        config_ssm_dtype=ssm_cfg,
        notes=tuple(notes),
        **attn,
    )


def _read_kimi_linear(c: Mapping[str, Any], arch: str, mt: str, ssm_cfg: Any) -> MambaGeometry:
    """Kimi-Linear: ``linear_attn_config`` KDA layers (1-based); the other layers are MLA."""
    notes: list[str] = []
    n = _int(c, "num_hidden_layers")
    la = c.get("linear_attn_config")
    if not isinstance(la, Mapping) or not isinstance(la.get("kda_layers"), list):
        raise InputError("Kimi-Linear config needs 'linear_attn_config' with 'kda_layers'", field="linear_attn_config")
    kda = set(la["kda_layers"])
    heads, hd = _int(la, "num_heads"), _int(la, "head_dim")
    conv = _int(la, "short_conv_kernel_size", 4, notes=notes)
    return MambaGeometry(
        kind="kda",
        architecture=arch or mt,
        num_hidden_layers=n,
        attention_layers=tuple(i for i in range(n) if i + 1 not in kda),
        linear_layers=tuple(i for i in range(n) if i + 1 in kda),
        intermediate_size=heads * hd,
        n_groups=heads,
        num_heads=heads,
        head_dim=hd,
        state_size=hd,
        conv_kernel=conv,
        config_ssm_dtype=None,
        attention_kind=Family.MLA,
        kv_lora_rank=_int(c, "kv_lora_rank"),
        qk_rope_head_dim=_int(c, "qk_rope_head_dim"),
        notes=tuple(notes),
    )


_Reader = Callable[[Mapping[str, Any], str, str, Any], MambaGeometry]

#: (model types, architectures, reader) -- the first row whose model type or architecture matches reads the config
_READERS: tuple[tuple[frozenset[str], frozenset[str], _Reader], ...] = (
    (frozenset(_GDN_TYPES), frozenset(_GDN_ARCHS), _read_gdn),
    (frozenset({"nemotron_h"}), frozenset({"NemotronHForCausalLM"}), _read_nemotron_h),
    (frozenset({"granitemoehybrid"}), frozenset({"GraniteMoeHybridForCausalLM"}), _read_granite_hybrid),
    (frozenset({"falcon_h1"}), frozenset({"FalconH1ForCausalLM"}), _read_falcon_h1),
    (frozenset({"kimi_linear"}), frozenset({"KimiLinearForCausalLM"}), _read_kimi_linear),
)


def mamba_geometry_from_config(cfg: Mapping[str, Any], *, engine: Engine = "sglang") -> MambaGeometry:
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

    ``engine`` picks the nested-config rule of :func:`kvplan.hfconfig.normalize.flatten_config`.

    Example (tests/data/shared/reference/models.json, Qwen3-Next-80B-A3B): 48 layers, interval 4 ->
    12 attention + 36 GDN layers; 16 key / 32 value heads of 128, conv 4.

    Source: sgl-project/sglang python/sglang/srt/configs/qwen3_next.py ``Qwen3NextConfig.mamba2_cache_params``,
    nemotron_h.py, granitemoehybrid.py, falcon_h1.py, kimi_linear.py; hybrid_arch.py ``mambaish_config``, v0.5.23.
    """
    c = _flat(cfg, engine)
    arch_list = list(c.get("architectures") or [])
    arch = arch_list[0] if arch_list else ""
    archs = set(arch_list)
    mt = str(c.get("model_type") or "")
    for types, arch_names, reader in _READERS:
        if archs & arch_names or mt in types:
            return reader(c, arch, mt, c.get("mamba_ssm_dtype"))
    raise InputError(
        f"{arch or mt or 'this model'}: kvplan reads the linear-attention state of Qwen3-Next/Qwen3.5, "
        "Nemotron-H, Granite-4 hybrid, Falcon-H1 and Kimi-Linear only",
        field="--model",
    )


# --------------------------------------------------------------------------------------------------
# State shapes and bytes
# --------------------------------------------------------------------------------------------------


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
    if not int_at_least(tp_size, 1):
        raise InputError(f"tp_size must be a positive integer, got {tp_size!r}", field="--tp-size")

    def div(a: int, what: str) -> int:
        if a % tp_size:
            raise InputError(
                f"{what} {a} is not divisible by attention-TP {tp_size}",
                field="--tp-size",
                hint="SGLang's linear-attention state shape asserts an exact split",
            )
        return a // tp_size

    if g.kind == "kda":
        proj = g.num_heads * g.head_dim
        return (g.conv_kernel - 1, div(proj, "KDA projection size") * 3), (
            div(g.num_heads, "KDA heads"),
            g.head_dim,
            g.head_dim,
        )
    groups = g.n_groups
    if groups % tp_size:
        groups += tp_size - groups
    conv_dim = g.intermediate_size + 2 * groups * g.state_size
    return (div(conv_dim, "conv_dim"), g.conv_kernel - 1), (
        div(g.num_heads, "linear-attention heads"),
        g.head_dim,
        g.state_size,
    )


def mamba_state_bytes(*, geometry: MambaGeometry, tp_size: int, conv_bytes: int, ssm_bytes: int) -> int:
    """Bytes of one request's state in one linear layer at the given element sizes:
    ``prod(conv) * conv_bytes + prod(ssm) * ssm_bytes`` (:func:`mamba_state_shapes`).

    Example: Qwen3-Next TP2, bf16 conv, fp32 ssm: 4096 x 3 x 2 + 16 x 128 x 128 x 4 = 1,073,152 B.
    """
    (c0, c1), (s0, s1, s2) = mamba_state_shapes(geometry=geometry, tp_size=tp_size)
    return c0 * c1 * conv_bytes + s0 * s1 * s2 * ssm_bytes

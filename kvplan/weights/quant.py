"""How each weight tensor is stored: quantization schemes, their bytes, and the ignore lists that keep layers 16-bit.

:func:`scheme_bytes` prices one ``rows x cols`` Linear weight in a scheme (scales included);
:func:`plan_quantization` decides, from the ``--quantization`` name and the checkpoint's ``quantization_config``,
which scheme the dense Linear layers and the routed experts use (:data:`SCHEME_RULES`, one rule per name), and
:class:`QuantPlan` prices each tensor (a tensor matching an ``ignore`` / ``modules_to_not_convert`` /
``exclude_modules`` pattern, and every non-Linear tensor, stays in the base dtype).

Sources (SGLang v0.5.23, sgl-project/sglang python/sglang/srt/layers/quantization/...): ``fp8.py
Fp8LinearMethod.create_weights`` (fp32 ``weight_scale_inv`` per block), ``mxfp4.py Mxfp4MoEMethod`` (e8m0 per 32;
``Mxfp4Config.get_quant_method`` keeps dense layers unquantized), ``modelopt_quant.py ModelOptFp4LinearMethod``
(fp8 e4m3 per 16 + two fp32 per-tensor scales), ``awq.py`` / ``gptq.py`` (fp16 scales, 4-bit packed zeros, int32
g_idx), ``compressed_tensors``; vLLM 0.5.3 ``fbgemm_fp8.py`` (fp32 scale per output channel, ``modules_to_not_convert``
layers unquantized).  The checkpoint's format itself is read by
:func:`kvplan.hfconfig.quant.quantization_from_config`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType, dtype_of
from kvplan.hfconfig.quant import (
    compressed_tensors_weights,
    config_dtype,
    expert_dtype,
    quant_int,
    quantization_from_config,
)
from kvplan.hfconfig.readers import is_int_list
from kvplan.weights.fields import bad_field, pattern_lists
from kvplan.weights.tensor import Tensor

__all__ = [
    "PLAIN_DTYPES",
    "SCHEME_RULES",
    "Patterns",
    "QuantPlan",
    "Scheme",
    "compressed_tensors_wna16",
    "ignore_patterns",
    "ignored",
    "plan_quantization",
    "scheme_bytes",
    "storage_bytes",
]

#: the plain (scale-free) dtypes a tensor is stored in; their widths are :class:`kvplan.hfconfig.dtypes.DType`'s
PLAIN_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32", "fp8", "int8")
#: the unquantized ones, which are also ``--quantization`` values and scheme names (no scales)
_SIXTEEN_BIT = ("bf16", "fp16", "fp32")

# Scheme and flag words.  These are names of *storage schemes* (a :class:`Scheme` ``name``, a ``--quantization`` value,
# a checkpoint field), not element dtypes: "int8" is int8 values plus a fp32 scale per output channel, "mxfp4" E2M1
# values plus an e8m0 scale per 32 -- a :class:`DType` member sizes one bare element and cannot say which scheme a
# word picks, so each test reads a named word list.
#: schemes with one fp32 scale per output channel (SGLang v0.5.23 layers/quantization/fp8.py per-channel
#: ``weight_scale``; int8 w8a8 ``w8a8_int8.py`` W8A8Int8LinearMethod)
_PER_CHANNEL_SCHEMES = ("fp8_channel", "int8")
#: OCP MX FP4 weights, e8m0 scale per 32 (SGLang v0.5.23 layers/quantization/mxfp4.py Mxfp4MoEMethod)
_MXFP4_SCHEMES = ("mxfp4",)
#: NVIDIA ModelOpt FP4, fp8 scale per 16 + fp32 per-tensor scales (SGLang v0.5.23 modelopt_quant.py
#: ModelOptFp4LinearMethod)
_NVFP4_SCHEMES = ("nvfp4",)
#: AWQ / GPTQ / compressed-tensors 4-bit integer groups (SGLang v0.5.23 layers/quantization/awq/, gptq/)
_INT4_SCHEMES = ("int4",)
#: ``expert_dtype`` values (DeepSeek-V4-Flash's config.json, top level or in quantization_config) that mean
#: fp4 routed experts (the same words :func:`kvplan.hfconfig.quant.quantization_from_config` reads as 'mixed')
_FP4_EXPERT_WORDS = ("fp4", "mxfp4")
#: compressed-tensors ``QuantizationArgs.type`` values of a float format (``QuantizationType.FLOAT``; "int" else)
_CT_FLOAT_TYPES = ("float",)
#: ``--quantization`` values read as AWQ / GPTQ integer weights when the checkpoint has no compressed-tensors group
_AWQ_GPTQ_QUANTIZATIONS = ("int4", "int8")
#: the ``--quantization`` value that picks int8 (per-channel fp32 scale) over AWQ / GPTQ int4 groups
_INT8_QUANTIZATIONS = ("int8",)
#: Hugging Face ``quantization_config.quant_method`` values of fp8 checkpoints (SGLang v0.5.23
#: layers/quantization/__init__.py registers ``"fp8": Fp8Config``)
_FP8_METHODS = ("fp8",)
#: ``quant_method`` values of FBGEMM fp8 checkpoints (Meta's Llama-3.1 FP8 releases): fp8 e4m3 weights with one fp32
#: scale per output channel (vLLM 0.5.3 ``model_executor/layers/quantization/fbgemm_fp8.py``
#: ``FBGEMMFp8LinearMethod.create_weights`` -> ``w8a8_utils.create_per_channel_scale_param``)
_FBGEMM_METHODS = ("fbgemm_fp8",)
#: the compressed-tensors ``format`` and weight bit widths of a WNA16 (weight-only integer) checkpoint (SGLang v0.5.9
#: ``compressed_tensors/schemes/compressed_tensors_wNa16_moe.py``: ``pack-quantized``, ``WNA16_SUPPORTED_BITS``)
_CT_WNA16_FORMAT = "pack-quantized"
_CT_WNA16_BITS = (4, 8)


def _plain_bytes(name: str) -> int:
    """Element bytes of a :data:`PLAIN_DTYPES` name (KeyError for any other, as a table lookup would)."""
    d = dtype_of(name) if name in PLAIN_DTYPES else None
    if d is None:
        raise KeyError(name)
    return d.bytes


@dataclass(frozen=True)
class Scheme:
    """A storage scheme and its parameters."""

    name: str  # bf16 fp16 fp32 fp8_block fp8_channel fp8_tensor mxfp4 nvfp4 int4 int8
    block: tuple[int, int] = (128, 128)
    group: int = 128
    zeros: bool = True  # int4: packed zero points (asymmetric)
    g_idx: bool = False  # GPTQ act-order index (int32 per input feature)


def _int4_bytes(n: int, rows: int, cols: int, group: int, zeros: bool, g_idx: bool) -> int:
    ng = math.ceil(cols / group) if group > 0 else 1  # group <= 0: per-channel, one group over the input features
    b = math.ceil(n / 2) + 2 * rows * ng
    if zeros:
        b += math.ceil(rows * ng / 2)
    if g_idx:
        b += 4 * cols
    return b


def scheme_bytes(
    scheme: str,
    rows: int,
    cols: int,
    *,
    block: tuple[int, int] = (128, 128),
    group: int = 128,
    zeros: bool = True,
    g_idx: bool = False,
) -> int:
    """Bytes of one ``rows x cols`` Linear weight stored as ``scheme`` (incl. its scales).

    * bf16/fp16: 2*r*c; fp32: 4*r*c.
    * fp8_block: r*c + 4*ceil(r/bn)*ceil(c/bk) (fp32 ``weight_scale_inv`` per block;
      sglang layers/quantization/fp8.py Fp8LinearMethod.create_weights).
    * fp8_channel: r*c + 4*r; fp8_tensor: r*c + 4 (+4 input scale ignored).
    * mxfp4: r*c/2 + r*ceil(c/32) (uint8 e8m0 per 32; sglang mxfp4.py) -> 4.25 bits/param.
    * nvfp4: r*c/2 + r*ceil(c/16) (fp8 e4m3 per 16) + 8 (fp32 weight_scale_2 and input_scale;
      sglang modelopt_quant.py ModelOptFp4LinearMethod) -> 4.5 bits/param.
    * int4 (group g): r*c/2 + 2*r*ceil(c/g) (fp16/bf16 scales) + r*ceil(c/g)/2 if zero points
      (AWQ/GPTQ qzeros, 4-bit packed) + 4*c if GPTQ g_idx.  g=128, asymmetric: 4.156 bits/param.
      ``group`` <= 0 (GPTQ ``group_size: -1``) is per-channel: one group, ceil(c/g) read as 1.
    * int8: r*c + 4*r (per-channel fp32 scale).

    Example: a 4096x4096 fp8 block-128 weight = 16,777,216 + 4*32*32 = 16,781,312 B.
    """
    n = rows * cols
    if scheme in _SIXTEEN_BIT:
        return _plain_bytes(scheme) * n
    if scheme == "fp8_block":
        return n + 4 * math.ceil(rows / block[0]) * math.ceil(cols / block[1])
    if scheme in _PER_CHANNEL_SCHEMES:
        return n + 4 * rows
    if scheme == "fp8_tensor":
        return n + 4
    if scheme in _MXFP4_SCHEMES:
        return math.ceil(n / 2) + rows * math.ceil(cols / 32)
    if scheme in _NVFP4_SCHEMES:
        return math.ceil(n / 2) + rows * math.ceil(cols / 16) + 8
    if scheme in _INT4_SCHEMES:
        return _int4_bytes(n, rows, cols, group, zeros, g_idx)
    raise InputError(f"unknown storage scheme {scheme!r}", field="quantization")


# --------------------------------------------------------------------------- ignore lists


def ignore_patterns(qc: Mapping[str, Any] | None, extra: Mapping[str, Any] | None) -> list[str]:
    """The ``ignore`` / ``modules_to_not_convert`` / ``ignored_layers`` / ``exclude_modules`` entries of the
    quantization config and of a ModelOpt ``hf_quant_config.json`` (its ``quantization`` object)."""
    return [str(p) for src in (qc, extra) for _, v in pattern_lists(src) for p in v]


class Patterns(list[str]):
    """The ignore patterns, pre-sorted once: plain names are looked up in a set of whole dotted runs.

    A plain pattern ``p`` matches ``path`` when ``"." + p + "."`` occurs in ``"." + path + "."``, i.e. when ``p``
    equals a run of whole components of ``path`` (``path == p`` and ``path.startswith(p + ".")`` included).
    Checking the ~20 runs of a path against a set replaces a scan of every pattern per tensor (GLM-5-FP8 lists
    712 modules_to_not_convert over ~2,000 tensors: 2.4 s before, milliseconds now).
    """

    def __init__(self, pats: Iterable[str]):
        super().__init__(pats)
        self.plain = frozenset(p for p in self if not p.startswith("re:") and not any(c in p for c in "*?["))
        self.other = [p for p in self if p not in self.plain]
        self.odd = any(p == "" or p.startswith(".") or p.endswith(".") for p in self.plain)


def _matches(path: str, p: str) -> bool:
    """One pattern: ``re:REGEX`` (re.match), a glob (also matching any child of ``path``), or a dotted name."""
    if p.startswith("re:"):
        return re.match(p[3:], path) is not None
    if any(c in p for c in "*?["):
        return fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path + ".x", p)
    return path == p or path.startswith(p + ".") or ("." + p + ".") in ("." + path + ".")


def ignored(path: str, pats: list[str]) -> bool:
    """Does any ignore pattern match the module ``path``?  (``Patterns`` answers plain names from a set.)"""
    if not pats:
        return False
    if isinstance(pats, Patterns) and not pats.odd:
        comps = path.split(".")
        if "" not in comps:
            n = len(comps)
            if pats.plain and any(".".join(comps[i:j]) in pats.plain for i in range(n) for j in range(i + 1, n + 1)):
                return True
            return ignored(path, pats.other)
    return any(_matches(path, p) for p in pats)


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class QuantPlan:
    """Which storage scheme each tensor gets: ``dense`` for Linear layers, ``expert`` for routed experts
    (None = the base dtype), except tensors matching ``patterns`` and tensors with a forced dtype."""

    base: str  # the 16-bit dtype of everything not quantized
    dense: Scheme | None
    expert: Scheme | None
    patterns: Patterns
    notes: tuple[str, ...]

    def storage(self, t: Tensor) -> Scheme | str:
        """How ``t`` is stored: its forced dtype, the base dtype (not a Linear weight, no scheme for its kind, or an
        ignore pattern matches its path), else the dense or expert scheme."""
        if t.dtype is not None:
            return t.dtype
        if not t.quant:
            return self.base
        s = self.expert if t.expert else self.dense
        if s is None or ignored(t.path, self.patterns):
            return self.base
        return s

    def tensor_bytes(self, t: Tensor, rows: int, cols: int) -> int:
        """Bytes of ``t`` stored as a ``rows x cols`` shard (see :func:`scheme_bytes`)."""
        return storage_bytes(self.storage(t), rows, cols)


def storage_bytes(storage: Scheme | str, rows: int, cols: int) -> int:
    """Bytes of a ``rows x cols`` tensor in a plain dtype (:data:`PLAIN_DTYPES`) or a :class:`Scheme`."""
    if isinstance(storage, str):
        return _plain_bytes(storage) * rows * cols
    s = storage
    return scheme_bytes(s.name, rows, cols, block=s.block, group=s.group, zeros=s.zeros, g_idx=s.g_idx)


@dataclass
class _Ctx:
    """What a scheme rule reads, and the notes it writes."""

    cfg: Mapping[str, Any]
    quantization: str
    qc: Mapping[str, Any] | None
    method: str
    from_ckpt: bool  # the checkpoint already stores this format (its block sizes / groups apply)
    notes: list[str] = field(default_factory=list)

    @property
    def q(self) -> Mapping[str, Any]:
        return self.qc or {}


Schemes = tuple[Scheme | None, Scheme | None]  # (dense, expert)


def _unquantized(c: _Ctx) -> Schemes:
    return None, None


def _block(c: _Ctx) -> tuple[int, int] | None:
    blk = c.q.get("weight_block_size") if c.from_ckpt else None
    if not blk:
        return None
    if not isinstance(blk, (list, tuple)) or len(blk) < 2 or not is_int_list(blk[:2], minimum=1):
        raise bad_field("quantization_config.weight_block_size", f"must be two positive integers, got {blk!r}"[:120])
    return int(blk[0]), int(blk[1])


def _fp8(c: _Ctx) -> Schemes:
    blk = _block(c)
    if c.method in _FBGEMM_METHODS:
        dense = Scheme("fp8_channel")
        c.notes.append(
            "fbgemm_fp8: fp8 weights with one fp32 scale per output channel (vLLM fbgemm_fp8.py "
            "FBGEMMFp8LinearMethod); the Linear layers named in modules_to_not_convert stay 16-bit"
        )
    elif blk:
        dense = Scheme("fp8_block", block=blk)
        c.notes.append(f"fp8 e4m3 weights with a fp32 scale per {blk[0]}x{blk[1]} block (1.0002 B/param at 128x128)")
    elif c.from_ckpt:
        dense = Scheme("fp8_tensor")
        c.notes.append("fp8 weights, one fp32 scale per tensor (per-tensor checkpoint)")
    else:
        dense = Scheme("fp8_tensor")
        c.notes.append(
            "fp8 weights without a quantization_config to read their scale layout from (online fp8 "
            "on a 16-bit checkpoint, or a preset's [weights] quantization): one fp32 scale per tensor"
        )
    expert = dense
    if expert_dtype(c.cfg) in _FP4_EXPERT_WORDS:
        expert = Scheme("mxfp4")
        c.notes.append("routed experts fp4 e2m1 + e8m0 scale per 32 (expert_dtype fp4): 4.25 bits/param")
    elif c.quantization == "mixed":
        # 'mixed' on an fp8 checkpoint is fp8 dense + fp4 routed experts (quantization_from_config names nothing
        # else so); a preset whose [config] leaves expert_dtype out still says 'mixed' in [weights].
        expert = Scheme("mxfp4")
        c.notes.append(
            "routed experts fp4 e2m1 + e8m0 scale per 32 ('mixed' = fp8 dense + fp4 experts): 4.25 bits/param"
        )
    return dense, expert


def _mxfp4(c: _Ctx) -> Schemes:
    c.notes.append(
        "experts MXFP4: 4.25 bits/param incl. e8m0 scales per 32; dense Linear layers "
        "unquantized (sglang mxfp4.py Mxfp4Config.get_quant_method)"
    )
    return None, Scheme("mxfp4")


def _nvfp4(c: _Ctx) -> Schemes:
    c.notes.append("NVFP4: 4 bits + fp8 scale per 16 + fp32 per-tensor scales (4.5 bits/param)")
    s = Scheme("nvfp4")
    return s, s


def _compressed_tensors(c: _Ctx, w: Mapping[str, Any]) -> Schemes:
    where = "quantization_config.config_groups.weights"
    bits = quant_int(w, "num_bits", default=4, where=where)
    gs = (
        0
        if w.get("strategy") == "channel"
        else _group_size(quant_int(w, "group_size", default=128, where=where), f"{where}.group_size")
    )
    sym = bool(w.get("symmetric", True))
    if w.get("type") in _CT_FLOAT_TYPES:
        s = Scheme("fp8_channel" if bits == 8 else "nvfp4")
    elif bits == 4:
        s = Scheme("int4", group=gs, zeros=not sym)
    else:
        s = Scheme("int8")
    c.notes.append(
        f"compressed-tensors {w.get('type')}{bits} {_group_name(gs)}, "
        f"{'symmetric (no zero points)' if sym else 'with zero points'}"
    )
    return s, s


def _group_size(gs: int, where: str) -> int:
    """A quantization group size: positive, or -1 = per-channel (GPTQ's convention, read here as 0: one group over
    all input features; SGLang v0.5.23 ``layers/quantization/gptq/schemes/gptq_linear.py
    GPTQLinearScheme.create_weights`` reads -1 as ``group_size = input_size``).

    Example: -1 -> 0 (per-channel); 128 -> 128; 0 is never seen (quant_int reads it as the default); -2 -> InputError.
    """
    if gs == -1:
        return 0
    if gs < 1:
        raise bad_field(where, f"must be a positive group size or -1 (per-channel), got {gs}")
    return gs


def _group_name(gs: int) -> str:
    return f"group {gs}" if gs > 0 else "per-channel (group_size -1)"


def _awq_gptq(c: _Ctx) -> Schemes:
    """AWQ / GPTQ int4 (16-bit scale per group, zero points unless symmetric, GPTQ g_idx) or int8."""
    if c.quantization in _INT8_QUANTIZATIONS:
        c.notes.append("int8 weights, fp32 scale per output channel")
        s = Scheme("int8")
        return s, s
    q = c.q
    gs = _group_size(quant_int(q, "group_size", "q_group_size", default=128), "quantization_config.group_size")
    gptq = "gptq" in c.method
    sym = bool(q.get("sym", False)) if gptq else not bool(q.get("zero_point", True))
    desc = bool(q.get("desc_act", False))
    s = Scheme("int4", group=gs, zeros=not sym, g_idx=gptq)
    c.notes.append(
        f"int4 {_group_name(gs)}: 16-bit scale per group"
        f"{'' if sym else ' + 4-bit packed zero point'}"
        f"{' + int32 g_idx per input feature (GPTQ)' if gptq else ''}"
        f"{' (desc_act)' if desc else ''}"
    )
    return s, s


def _integer(c: _Ctx) -> Schemes:
    """int4 / int8 / mixed: compressed-tensors' weights group when the checkpoint has one, else AWQ / GPTQ."""
    w = compressed_tensors_weights(c.qc) if (c.qc and c.method == "compressed-tensors") else None
    if w is not None:
        return _compressed_tensors(c, w)
    if c.quantization in _AWQ_GPTQ_QUANTIZATIONS:
        return _awq_gptq(c)
    raise InputError("quantization 'mixed' needs the checkpoint's quantization_config", field="quantization")


def _mixed(c: _Ctx) -> Schemes:
    """The checkpoint's own mix: fp8 dense (+ fp4 experts) for an fp8 method, else its integer groups."""
    return _fp8(c) if c.method in (*_FP8_METHODS, *_FBGEMM_METHODS) else _integer(c)


def compressed_tensors_wna16(qc: Any) -> bool:
    """Is ``qc`` (a ``quantization_config``) a compressed-tensors weight-only integer checkpoint, the scheme SGLang's
    WNA16 MoE method loads: ``quant_method`` compressed-tensors, ``format`` pack-quantized, the first weights group
    ``type`` int of 4 or 8 bits with no ``input_activations`` (SGLang v0.5.9 ``compressed_tensors.py``
    ``CompressedTensorsConfig._is_wNa16_group_channel``).

    Example: moonshotai/Kimi-K2.5 (int4, group 32, ``input_activations: null``) -> True; an fp8 W8A8 group or an
    AWQ config -> False.
    """
    if not isinstance(qc, Mapping) or str(qc.get("quant_method") or "").lower() != "compressed-tensors":
        return False
    if qc.get("format") != _CT_WNA16_FORMAT:
        return False
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping):
        return False
    for g in groups.values():
        if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping):
            w = g["weights"]
            return w.get("type") == "int" and w.get("num_bits") in _CT_WNA16_BITS and g.get("input_activations") is None
    return False


#: --quantization name -> the rule that picks (dense, expert) schemes and writes their notes
SCHEME_RULES: dict[str, Callable[[_Ctx], Schemes]] = {
    "bf16": _unquantized,
    "fp16": _unquantized,
    "fp32": _unquantized,
    "fp8": _fp8,
    "mxfp4": _mxfp4,
    "nvfp4": _nvfp4,
    "int4": _integer,
    "int8": _integer,
    "mixed": _mixed,
}


def _base_dtype(cfg: Mapping[str, Any], quantization: str, notes: list[str]) -> str:
    """The dtype of unquantized tensors: a 16/32-bit ``--quantization`` itself, else the config's dtype (float32
    served as bf16, SGLang/vLLM ``dtype=auto``)."""
    if quantization in _SIXTEEN_BIT and dtype_of(quantization) is not DType.FP32:
        return quantization
    # a float32 checkpoint (the preset's "fp32" or the config's torch_dtype) is never served in 32 bit: both
    # engines' ``_get_and_verify_dtype`` downcast it under --dtype auto (SGLang python/sglang/srt/configs/
    # model_config.py v0.5.23; vLLM vllm/config/model.py), and kvplan has no --dtype float32
    base = DType.FP32.canonical if quantization == DType.FP32.canonical else config_dtype(cfg)
    if dtype_of(base) is DType.FP32:
        notes.append(
            "config dtype float32 is served in 16 bit (dtype=auto downcasts it: fp16, bf16 for Gemma; priced as bf16)"
        )
        return "bf16"
    return base


def plan_quantization(
    *, cfg: Mapping[str, Any], quantization: str, hf_quant_config: Mapping[str, Any] | None = None
) -> QuantPlan:
    """The :class:`QuantPlan` of a flat config under ``quantization`` (bf16 fp16 fp32 fp8 mxfp4 nvfp4 int4 int8
    mixed; InputError otherwise).

    Example: DeepSeek-V3 (``weight_block_size`` [128, 128]) under ``fp8``: dense and expert Linear layers
    ``fp8_block`` 128x128, embeddings / lm_head / norms / router gates bf16.
    """
    rule = SCHEME_RULES.get(quantization) if isinstance(quantization, str) else None
    if rule is None:
        raise InputError(f"unknown quantization {quantization!r}", field="quantization")
    notes: list[str] = []
    raw_qc = cfg.get("quantization_config")
    qc = raw_qc if isinstance(raw_qc, Mapping) else None
    base = _base_dtype(cfg, quantization, notes)
    patterns = Patterns(ignore_patterns(qc, hf_quant_config))
    if quantization in _SIXTEEN_BIT:
        return QuantPlan(base, None, None, patterns, (*notes, f"all weights {base}"))
    from_ckpt = quantization_from_config(cfg) == quantization or (quantization == "mixed" and qc is not None)
    ctx = _Ctx(cfg, quantization, qc, str((qc or {}).get("quant_method") or "").lower(), from_ckpt, notes)
    dense, expert = rule(ctx)
    if patterns:
        notes.append(
            f"{len(patterns)} ignore/modules_to_not_convert pattern(s) from the "
            "quantization config keep matching layers in " + base
        )
    notes.append("embeddings, lm_head, norms, router gates and biases stay " + base)
    return QuantPlan(base, dense, expert, patterns, tuple(notes))

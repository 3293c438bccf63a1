"""A model's work per engine step, per family: linear FLOPs, weight bytes, attention FLOPs and KV bytes, states.

:func:`model_ops` reads a :class:`kvplan.hfconfig.spec.ModelSpec` once into a :class:`ModelOps` (plain numbers);
the functions below evaluate one step from it.  They take floats and use only arithmetic and :func:`lo` / :func:`hi`
(``min`` / ``max`` written as arithmetic), so the same calls evaluate numpy arrays of tokens or contexts.

Linear layers (every family): 2 FLOPs per parameter per token for the dense part (attention projections, dense
MLP, shared experts, router, hyper-connections, lm_head in decode) and for the ``k`` routed experts a token picks;
weights streamed per step = dense bytes + routed-expert bytes x the fraction of experts the step's ``B`` tokens
touch, ``1 - (1 - k/E) ** B`` (each token picks k of E experts; the expected number of distinct experts is
``E (1 - (1 - k/E) ** B)``).  Parameters come from the tensor inventory (:mod:`kvplan.weights.inventory`), bytes
per rank from the weight estimate (:func:`kvplan.weights.estimate.estimate_weight_bytes`, the same one ``fit``
uses): the quantization each checkpoint stores is priced there, not here.

Attention (per :class:`AttnGroup`, one per layer kind): a query at position ``p`` attends ``keys(p)`` keys,
``keys = lo(lo(p, window) / ratio, topk) + extra``; FLOPs per (query head, key) = ``2 (d_qk + d_v)`` (QK^T and PV).
Per family:

* GQA/MHA: every layer, ``d_qk = head_dim``, ``d_v = v_head_dim``; KV bytes per key = 2 x kv heads per rank x
  head_dim x dtype bytes (kv heads split over attention TP, at least one per rank);
* sliding window (hybrid SWA): the sliding layers' keys capped at the window;
* MLA: prefill non-absorbed (``d_qk = qk_nope + qk_rope``, ``d_v = v_head_dim``), decode absorbed
  (``2 d_c + d_rope`` per key per head, d_c = kv_lora_rank); the latent (d_c + d_rope per key) is replicated on
  every rank, so every rank reads all of it;
* DSA (V3.2, GLM-5): MLA absorbed over the top-k (``index_topk``) keys, plus an indexer that scores every prefix
  token (``2 x index_n_heads x index_head_dim`` FLOPs, ``index_head_dim + 4`` bytes per key: fp8 + a scale);
* DeepSeek-V4: every layer attends its sliding window (``sliding_window`` keys) plus its compressed pool: ratio-r
  layers hold one entry per r tokens; layers with an indexer attend the top ``index_topk`` entries (V4: ratio 4;
  V4.1: every compressed layer, the indexer running on ``index_source_layer_ids``); ratio-128 layers attend all;
  one KV head of ``head_dim`` (MQA), ``d_qk = d_v = head_dim``;
* Mamba / Gated-DeltaNet layers: no KV; a state per request read and written each decode step
  (``heads x head_dim x state_size`` fp32 values), ``4 x heads x head_dim x state_size`` FLOPs per token.

Kernel counts per layer (the per-kernel overhead term of :mod:`kvplan.perf.schedule`) are counted from SGLang's
model forwards (sgl-project/sglang v0.5.23 ``python/sglang/srt/models/llama.py`` ``LlamaDecoderLayer.forward``,
``deepseek_v2.py`` ``DeepseekV2AttentionMLA``, ``deepseek_v4.py`` ``DeepseekV4DecoderLayer``, ``qwen3_next.py``):
norms, projections, rotary, KV store, attention, residual adds, the MoE router / top-k / sort / two grouped GEMMs /
combine.  On SM120 SGLang runs DeepSeek-V4's indexer logits in torch and turns its TileLang mHC pre and top-k v2
paths off (``arg_groups/model_hook.py``, the ``is_sm120`` branch for DeepseekV4ForCausalLM): those layers launch
the unfused ops (:data:`DSV4_SM120_MHC_KERNELS`, :data:`DSV4_SM120_INDEXER_KERNELS`).
"""

from __future__ import annotations

from typing import Any

from kvplan.family import Family
from kvplan.hfconfig.readers import is_int, positive_or
from kvplan.perf.record import Record

# ---------------------------------------------------------------------------------------------- arithmetic helpers


def lo(a: Any, b: Any) -> Any:
    """min(a, b) as arithmetic (numpy-safe): ``(a + b - |a - b|) / 2``.  Example: lo(3, 5) = 3."""
    return (a + b - abs(a - b)) / 2


def hi(a: Any, b: Any) -> Any:
    """max(a, b) as arithmetic (numpy-safe): ``(a + b + |a - b|) / 2``.  Example: hi(3, 5) = 5."""
    return (a + b + abs(a - b)) / 2


def experts_touched_fraction(*, tokens: Any, topk: int, experts: int) -> Any:
    """Fraction of a layer's routed experts that ``tokens`` tokens touch: ``1 - (1 - k/E) ** B``.

    Example: k = 6, E = 384, B = 1 -> 0.0156 (6 of 384); B = 2048 -> 1.0 (every expert is read).
    """
    if experts <= 0:
        return 0.0 * tokens
    return 1 - (1 - topk / experts) ** tokens


# ---------------------------------------------------------------------------------------------- the decomposition

KERNELS_ATTENTION = {"gqa": 8, "mla": 13, "dsa": 19, "dsv4": 30, "linear": 14}
KERNELS_MLP = 5  # norm, gate_up, activation, down, residual add
KERNELS_MOE = 10  # norm, router GEMM, top-k, align/sort, two grouped GEMMs, activation, combine, shared, add
#: DeepSeek-V4 on SM120 (SGLang v0.5.23 ``arg_groups/model_hook.py``, the ``is_sm120`` branch): the mHC pre runs
#: ``hc_pre_torch_impl`` (flatten, square, mean, rsqrt, linear, scale: 6 ops) + ``hc_split_sinkhorn`` +
#: ``mhc_combine`` instead of one TileLang kernel, at both sites of a layer (+12); the indexer's paged MQA logits
#: run in torch (``layers/attention/dsv4/indexer.py fp8_paged_mqa_logits_torch``: gather, dequantise, scale, einsum,
#: relu, weight, sum, mask: about 12 ops) on the indexer layers (V4 only: V4.1's fp4 indexer keeps DeepGEMM)
DSV4_SM120_MHC_KERNELS = 12
DSV4_SM120_INDEXER_KERNELS = 12


class AttnGroup(Record):
    """One kind of layer's attention, whole layer (before attention-TP splitting unless said)."""

    kind: str  # label: full, sliding, mla, dsa, dsv4 c4, linear ...
    layers: int
    q_heads: float  # query heads per rank
    flops_per_key_prefill: float  # per query head per key (QK + PV)
    flops_per_key_decode: float
    kv_bytes_per_key: float  # per rank per layer, at decode
    window: int = 0  # 0 = none
    ratio: int = 1
    topk: int = 0  # 0 = all
    extra_keys: int = 0  # keys attended besides the compressed pool (DeepSeek-V4 window)
    index_flops_per_key: float = 0.0  # indexer per token per scanned entry (replicated: every rank scores all heads)
    index_bytes_per_key: float = 0.0
    index_layers: int = 0  # layers of this group that run the indexer
    index_capped_layers: int = 0  # of those, layers that score only a capped candidate set (DeepSeek-V4.1)
    index_cap: int = 0  # entries the capped layers score
    state_bytes: float = 0.0  # per request per layer per rank (linear attention)
    state_flops: float = 0.0  # per token per layer per rank


class Gemm(Record):
    """One linear layer's GEMM on one rank: ``n`` output columns, ``nbytes`` of weight per instance (one expert for
    routed experts), ``count`` instances per step (layers), ``expert``: a routed-expert GEMM (its instances are
    the experts a step touches), ``quantized``: a block-scaled fp8 / fp4 weight (below 2 bytes per parameter)."""

    n: int
    nbytes: float
    count: int
    expert: bool = False
    quantized: bool = False


def rank_gemms(
    sums: dict[str, float], breakdown: dict[str, int], *, groups: dict[str, int], ep: int
) -> tuple[Gemm, ...]:
    """The GEMMs of :func:`gemm_signatures` on one rank: rows split over the tensor's group (``out``: ceil(rows /
    g); ``heads``: ceil(rows / g) heads x rows per head; ``in``: the columns split, the rows whole), experts over EP,
    and each GEMM's bytes its share (by parameters) of its component's bytes per rank (the weight estimate's
    breakdown, which prices the quantization the checkpoint stores).

    Example: DeepSeek-V4.1-Flash at TP8 / EP8: the shared experts' gate_up (4,608 x 5,120, out, TP) is n = 576 on a
    rank, 576 x 5,120 = 2,949,120 parameters.
    """
    rows_params: list[tuple[str, int, float, int, bool, int]] = []
    comp_params: dict[str, float] = {}
    for key, count in sums.items():
        if not key.startswith("gemm|"):
            continue
        _, comp, rows_s, cols_s, split, group, head_s, expert_s, copies_s = key.split("|")
        rows, cols, head, expert, copies = int(rows_s), int(cols_s), int(head_s), expert_s == "1", int(copies_s)
        g = max(1, groups.get(group, 1))
        if split == "out":
            n, k = -(-rows // g), cols
        elif split == "heads":
            n, k = max(1, -(-rows // g)) * head, cols
        elif split == "in":
            n, k = rows, -(-cols // g)
        else:
            n, k = rows * (head if split == "heads" else 1), cols
        local = -(-copies // max(ep, 1)) if expert else 1
        p = float(n) * k  # one instance (one expert)
        rows_params.append((comp, n, p, int(count), expert, local))
        comp_params[comp] = comp_params.get(comp, 0.0) + p * local * count
    out: list[Gemm] = []
    for comp, n, p, count, expert, local in rows_params:
        total = comp_params.get(comp, 0.0)
        cbytes = float(breakdown.get(comp, 0))
        if not total or not cbytes:
            continue
        bpp = cbytes / total
        out.append(
            Gemm(n=n, nbytes=p * bpp, count=count * (1 if expert else local), expert=expert, quantized=bpp < 1.9)
        )
    return tuple(out)


class ModelOps(Record):
    """A model on one rank of a deployment, as plain numbers (see the module docstring)."""

    family: str
    hidden: int
    layers: int
    dense_params: float  # per token active, non-expert, decoder layers (whole model)
    lm_head_params: float
    expert_params: float  # one routed expert of one layer
    moe_layers: int
    experts: int
    topk: int
    dense_bytes: float  # per rank: weights streamed every step besides routed experts (lm_head included)
    expert_bytes: float  # per rank: routed experts
    draft_layer_params: float  # one MTP / draft layer, per token active (dense + k experts)
    groups: tuple[AttnGroup, ...]
    kernels_per_layer: float
    tp: int
    attn_tp: int
    weight_dtype: str  # compute dtype of the dense GEMMs
    expert_dtype: str  # compute dtype of the routed-expert GEMMs
    act_bytes_per_token: float = 0.0  # activation traffic per token, all layers, per rank (see activation_bytes)
    notes: tuple[str, ...] = ()
    gemms: tuple[Gemm, ...] = ()  # the linear layers' GEMMs on one rank (rank_gemms)
    gemm_tile: tuple[int, int] = (128, 128)  # (N, K) of a block-scaled GEMM's tile (gemm_tile)
    local_experts: int = 0  # routed experts per layer on one rank (EP)
    ep: int = 1  # expert-parallel ranks (kvplan.perf.moe.topk_copy_bytes)


def _kv_bytes(kv_dtype: str) -> float:
    from kvplan.geometry.kvdtype import kv_element_bits

    try:
        return kv_element_bits(kv_dtype) / 8
    except Exception:
        return 2.0


def _gqa_group(cfg: Any, *, kind: str, layers: int, attn_tp: int, kvb: float, window: int = 0) -> AttnGroup:
    heads = positive_or(cfg, "num_attention_heads", 1)
    hd = positive_or(cfg, "head_dim") or positive_or(cfg, "hidden_size", 1) // heads
    vd = positive_or(cfg, "v_head_dim", hd)
    kv = positive_or(cfg, "num_key_value_heads", heads)
    kv_rank = -(-kv // attn_tp)
    q_rank = heads / attn_tp
    return AttnGroup(
        kind=kind,
        layers=layers,
        q_heads=q_rank,
        flops_per_key_prefill=2.0 * (hd + vd),
        flops_per_key_decode=2.0 * (hd + vd),
        kv_bytes_per_key=kv_rank * (hd + vd) * kvb,
        window=window,
    )


def _attention_groups(spec: Any, *, attn_tp: int, kv_dtype: str, engine: str) -> tuple[list[AttnGroup], list[str]]:
    cfg = spec.config
    fam = str(spec.family)
    kvb = _kv_bytes(kv_dtype)
    n = spec.num_layers
    notes: list[str] = []
    heads = positive_or(cfg, "num_attention_heads", 1)
    if fam in (Family.MLA, Family.DSA):
        dc, dr = positive_or(cfg, "kv_lora_rank", 512), positive_or(cfg, "qk_rope_head_dim", 64)
        dn, dv = positive_or(cfg, "qk_nope_head_dim", 128), positive_or(cfg, "v_head_dim", 128)
        q = heads / attn_tp
        absorbed = 2.0 * (2 * dc + dr)
        if fam == Family.DSA:
            ih, idim, topk = (
                positive_or(cfg, "index_n_heads", 64),
                positive_or(cfg, "index_head_dim", 128),
                positive_or(cfg, "index_topk", 2048),
            )
            g = AttnGroup(
                kind="dsa",
                layers=n,
                q_heads=q,
                flops_per_key_prefill=absorbed,
                flops_per_key_decode=absorbed,
                kv_bytes_per_key=(dc + dr) * kvb,
                topk=topk,
                index_flops_per_key=2.0 * ih * idim,
                index_bytes_per_key=idim + 4.0,
                index_layers=n,
            )
            notes.append(f"DSA: attention over the top {topk:,} keys, an indexer of {ih} x {idim} over every key")
            return [g], notes
        return [
            AttnGroup(
                kind="mla",
                layers=n,
                q_heads=q,
                flops_per_key_prefill=2.0 * (dn + dr + dv),
                flops_per_key_decode=absorbed,
                kv_bytes_per_key=(dc + dr) * kvb,
            )
        ], ["MLA: prefill non-absorbed, decode absorbed (latent replicated on every rank)"]
    if fam == Family.DSV4:
        from kvplan.geometry.dsv4 import dsv4_geometry_from_config

        g4 = dsv4_geometry_from_config(cfg)
        hd = g4.head_dim
        topk = positive_or(cfg, "index_topk", 512)
        ih, idim = positive_or(cfg, "index_n_heads", 64), g4.index_head_dim or 128
        idx_src = cfg.get("index_source_layer_ids")
        idx_layers = set(idx_src) if isinstance(idx_src, list) else None
        # V4.1: indexer layers after candidate_source_layer_id score only the candidate blocks it picked
        # (SGLang v0.5.23 layers/attention/dsv4/dsv41_sparse.py DeepseekV41Indexer.uses_candidates)
        cand_src = cfg.get("candidate_source_layer_id")
        cand_src = cand_src if is_int(cand_src) else -1
        cand_cap = positive_or(cfg, "candidate_topk_blocks") * positive_or(cfg, "candidate_block_size")
        q = heads / attn_tp
        per = 2.0 * (hd + hd)
        key_bytes = hd * kvb
        by_ratio: dict[int, list[int]] = {}
        for i, r in enumerate(g4.compress_ratios):
            by_ratio.setdefault(int(r), []).append(i)
        out: list[AttnGroup] = []
        for r, ids in sorted(by_ratio.items()):
            if r == 0:
                out.append(AttnGroup("dsv4 window", len(ids), q, per, per, key_bytes, window=g4.sliding_window))
                continue
            selected = r != 128  # ratio-128 layers attend every compressed entry; the others the indexer's top-k
            idx_ids = [i for i in ids if i in idx_layers] if idx_layers is not None else (ids if selected else [])
            n_idx = len(idx_ids)
            n_cap = sum(1 for i in idx_ids if 0 <= cand_src < i) if cand_cap else 0
            out.append(
                AttnGroup(
                    kind=f"dsv4 ratio {r}",
                    layers=len(ids),
                    q_heads=q,
                    flops_per_key_prefill=per,
                    flops_per_key_decode=per,
                    kv_bytes_per_key=key_bytes,
                    ratio=r,
                    topk=topk if selected else 0,
                    extra_keys=g4.sliding_window,
                    index_flops_per_key=2.0 * ih * idim if n_idx else 0.0,
                    index_bytes_per_key=(idim + 4.0) if n_idx else 0.0,
                    index_layers=n_idx,
                    index_capped_layers=n_cap,
                    index_cap=cand_cap if n_cap else 0,
                )
            )
        notes.append(
            f"DeepSeek-V4: window {g4.sliding_window} + compressed pools (ratios {sorted(by_ratio)}), top-{topk} "
            f"selection, indexer {ih} x {idim}"
        )
        return out, notes
    if fam == Family.HYBRID_SWA:
        from kvplan.geometry.swa import swa_layers_from_config

        s = swa_layers_from_config(cfg, engine="vllm" if engine == "vllm" else "sglang")
        full = _gqa_group(cfg, kind="full", layers=len(s.full_layers), attn_tp=attn_tp, kvb=kvb)
        slid = _gqa_group(
            cfg, kind="sliding", layers=len(s.swa_layers), attn_tp=attn_tp, kvb=kvb, window=s.sliding_window
        )
        return [full, slid], [f"sliding window {s.sliding_window} on {len(s.swa_layers)} of {n} layers"]
    if fam == Family.HYBRID_MAMBA:
        from kvplan.geometry.mamba import mamba_geometry_from_config

        m = mamba_geometry_from_config(cfg, engine="vllm" if engine == "vllm" else "sglang")
        attn = _gqa_group(cfg, kind="full", layers=len(m.attention_layers), attn_tp=attn_tp, kvb=kvb)
        if m.attention_kind == Family.MLA:
            attn = AttnGroup(
                "mla",
                len(m.attention_layers),
                heads / attn_tp,
                2.0 * 384,
                2.0 * 1088,
                (m.kv_lora_rank + m.qk_rope_head_dim) * kvb,
            )
        state = m.num_heads * m.head_dim * max(m.state_size, 1) / attn_tp
        lin = AttnGroup(
            kind=f"linear ({m.kind})",
            layers=len(m.linear_layers),
            q_heads=0,
            flops_per_key_prefill=0.0,
            flops_per_key_decode=0.0,
            kv_bytes_per_key=0.0,
            state_bytes=state * 4.0,
            state_flops=4.0 * state,
        )
        return [attn, lin], [f"{m.kind}: {len(m.linear_layers)} state layers, {len(m.attention_layers)} attention"]
    window = positive_or(cfg, "sliding_window") if cfg.get("use_sliding_window") else 0
    return [_gqa_group(cfg, kind="full", layers=n, attn_tp=attn_tp, kvb=kvb, window=window)], notes


_SKIP_COMPS = {"embeddings", "engram", "vision", "mtp", "draft"}
_DENSE_SKIP_BYTES = {"embeddings", "engram", "vision", "mtp", "draft", "experts"}


def compute_dtype(quantization: str, *, gpu_fp8: bool, gpu_fp4: bool) -> tuple[str, str]:
    """(dense GEMM dtype, routed-expert GEMM dtype) for a checkpoint quantization.

    fp8 checkpoints run fp8 GEMMs on GPUs with fp8 tensor cores; nvfp4 runs fp4 where the GPU has fp4; mxfp4 and
    int4 (w4a16 kernels: Marlin, the MXFP4 MoE runners with bf16 activations) run at the bf16 rate; "mixed"
    (DeepSeek-V4: fp8 dense, fp4 experts) runs fp8 dense and bf16-rate experts.  Everything else bf16.
    """
    q = (quantization or "bf16").lower()
    f8 = "fp8" if gpu_fp8 else "bf16"
    if q in ("fp8", "fp8_e4m3", "fbgemm_fp8", "compressed-tensors-fp8", "w8a8_fp8", "modelopt_fp8"):
        return f8, f8
    if q in ("nvfp4", "modelopt_fp4", "modelopt_nvfp4"):
        return f8, ("fp4" if gpu_fp4 else "bf16")
    if q == "mixed":
        return f8, "bf16"
    return "bf16", "bf16"


def inventory_sums(config: Any, *, engine: str) -> dict[str, float]:
    """The parameter sums the step model needs from the tensor inventory (plain numbers, cacheable):
    ``dense`` (decoder layers' non-expert parameters), ``lm_head``, ``expert`` (one routed expert of one layer,
    mean over the MoE layers), ``moe_layers``, ``experts`` (routed experts per layer), ``mtp_dense``,
    ``mtp_expert``, ``mtp_copies`` (the MTP / NextN layers the checkpoint stores), ``hc_mult`` (DeepSeek-V4's
    hyper-connection streams, 1 for other families)."""
    from kvplan.weights.inventory import dsv4_hc_mult, inventory
    from kvplan.weights.tensor import Stage

    inv = inventory(config, engine=engine)
    dense = lm = mtp_dense = mtp_expert = 0.0
    mtp_copies = 0
    per_expert: dict[int, float] = {}
    copies: dict[int, int] = {}
    for t in inv.tensors:
        if t.stage == Stage.MTP:
            if t.expert:
                mtp_expert += t.params
                mtp_copies = max(mtp_copies, t.copies)
            else:
                mtp_dense += t.params
            continue
        if t.comp in _SKIP_COMPS or t.stage in (Stage.CKPT_ONLY, Stage.DRAFT):
            continue
        if t.comp == "lm_head":
            lm += t.params
        elif t.expert and t.layer is not None:
            per_expert[t.layer] = per_expert.get(t.layer, 0.0) + t.params / max(t.copies, 1)
            copies[t.layer] = max(copies.get(t.layer, 0), t.copies)
        elif t.layer is not None:
            dense += t.params
    if lm == 0.0:  # tied embeddings: the embedding matrix is the head
        lm = float(sum(t.params for t in inv.tensors if t.comp == "embeddings"))
    n_moe = len(per_expert)
    return {
        **gemm_signatures(inv.tensors),
        "dense": dense,
        "lm_head": lm,
        "expert": sum(per_expert.values()) / n_moe if n_moe else 0.0,
        "moe_layers": float(n_moe),
        "experts": float(max(copies.values()) if copies else 0),
        "mtp_dense": mtp_dense,
        "mtp_expert": mtp_expert,
        "mtp_copies": float(mtp_copies),
        "hc_mult": float(dsv4_hc_mult(inv.cfg)) if inv.family == Family.DSV4 else 1.0,
    }


def gemm_signatures(tensors: Any) -> dict[str, float]:
    """The decoder layers' quantizable linear weights as GEMMs, counted by shape: ``{"gemm|comp|rows|cols|split|
    group|head|expert|copies": layers}`` (plain numbers, so the sums stay cacheable).  Weights of one layer that the
    engines fuse into one GEMM (q / k / v, gate / up, MLA's q_a / kv_a: the same input, the same split and group,
    one component) are one GEMM of their summed rows; row-parallel weights (split over the input) stay apart.

    Example: Llama-3.1-8B: per layer one fused qkv (48 heads of 128 = 6,144 x 4,096, heads), o (4,096 x 4,096,
    in), gate_up (28,672 x 4,096, out), down (4,096 x 14,336, in): 4 signatures of 32 layers each.
    """
    from kvplan.weights.tensor import Split, Stage

    fused: dict[tuple[Any, ...], list[int]] = {}
    for t in tensors:
        if not t.quant or t.layer is None or t.cols <= 1 or t.comp in _SKIP_COMPS or t.stage != Stage.LAYER:
            continue
        apart = t.split == Split.IN
        key = (t.layer, t.comp, t.cols, str(t.split), str(t.group), t.head, t.expert, t.copies, t.path if apart else "")
        fused.setdefault(key, [0])[0] += t.rows
    out: dict[str, float] = {}
    for (_, comp, cols, split, group, head, expert, copies, _), (rows,) in fused.items():
        sig = f"gemm|{comp}|{rows}|{cols}|{split}|{group}|{head}|{int(expert)}|{copies}"
        out[sig] = out.get(sig, 0.0) + 1.0
    return out


def model_ops(
    spec: Any,
    dep: Any,
    *,
    gpu_fp8: bool,
    gpu_fp4: bool,
    sums: dict[str, float],
    breakdown: dict[str, int],
    sm: str = "",
) -> ModelOps:
    """Read ``spec`` (a ModelSpec) for deployment ``dep`` (tp, dp attention, kv dtype, engine) into
    :class:`ModelOps`.  ``sums``: :func:`inventory_sums`; ``breakdown``: the weight estimate's per-GPU bytes per
    component (:class:`kvplan.weights.estimate.WeightEstimate` ``breakdown``)."""
    cfg = spec.config
    topk = (
        positive_or(cfg, "num_experts_per_tok")
        or positive_or(cfg, "moe_topk")
        or positive_or(cfg, "num_experts_per_token")
        or 0
    )
    moe_layers = int(sums["moe_layers"])
    tp = int(dep.tp or 1)
    dp = int(dep.dp or 1)
    attn_tp = tp // dp if (dep.enable_dp_attention and dep.engine == "sglang" and dp > 0) else tp
    expert_bytes = float(breakdown.get("experts", 0))
    dense_bytes = float(sum(v for k, v in breakdown.items() if k not in _DENSE_SKIP_BYTES))
    kv_dtype = str(dep.kv_cache_dtype or "auto")
    if kv_dtype in ("auto", "bfloat16", "float16"):
        kv_dtype = "bf16"
    groups, notes = _attention_groups(spec, attn_tp=attn_tp, kv_dtype=kv_dtype, engine=dep.engine)
    fam = str(spec.family)
    key = {"mla": "mla", "dsa": "dsa", "dsv4": "dsv4"}.get(fam, "gqa")
    k_attn = sum(g.layers * KERNELS_ATTENTION["linear" if g.state_bytes else key] for g in groups)
    k_ffn = moe_layers * KERNELS_MOE + (spec.num_layers - moe_layers) * KERNELS_MLP
    if fam == Family.DSV4 and sm.startswith("12"):
        # V4.1's fp4 indexer scores with DeepGEMM's fp8_fp4_paged_mqa_logits whatever the torch switch says
        # (SGLang v0.5.23 layers/attention/dsv4/indexer.py: the fp4 branch is tested first)
        v41 = str(cfg.get("model_type") or "").startswith("deepseek_v41") or "DeepseekV41" in str(
            cfg.get("architectures")
        )
        idx_layers = 0 if v41 else sum(g.index_layers for g in groups)
        extra = spec.num_layers * DSV4_SM120_MHC_KERNELS + idx_layers * DSV4_SM120_INDEXER_KERNELS
        k_attn += extra
        notes.append(
            f"SM120: DeepSeek-V4's mHC pre unfused and its indexer logits in torch (+{extra:,} kernels per step; "
            "SGLang arg_groups/model_hook.py)"
        )
    wdt, edt = compute_dtype(spec.quantization, gpu_fp8=gpu_fp8, gpu_fp4=gpu_fp4)
    hc = int(sums.get("hc_mult", 1)) if fam == Family.DSV4 else 1
    moe_inter = positive_or(cfg, "moe_intermediate_size")
    shared = positive_or(cfg, "n_shared_experts") or (1 if positive_or(cfg, "shared_expert_intermediate_size") else 0)
    inter_moe = topk * moe_inter + (positive_or(cfg, "shared_expert_intermediate_size") or shared * moe_inter)
    act = activation_bytes(
        hidden=positive_or(cfg, "hidden_size", 1),
        inter=float(positive_or(cfg, "intermediate_size")),
        inter_moe=float(inter_moe),
        moe_layers=moe_layers,
        layers=spec.num_layers,
        tp=tp,
        hc_mult=hc,
    )
    ep = max(1, int(getattr(dep, "ep", None) or 1))
    moe_tp = max(1, tp // ep)
    if not any(k.startswith("gemm|") for k in sums):  # sums cached before the GEMM shapes were counted
        from kvplan.weights.inventory import inventory

        sums = {**sums, **gemm_signatures(inventory(spec.raw_config or cfg, engine=dep.engine).tensors)}
    sizes = {"attn": attn_tp, "mixer": attn_tp, "tp": tp, "dense": tp, "moe": moe_tp, "lm": tp}
    gemms = rank_gemms(sums, breakdown, groups=sizes, ep=ep)
    mtp_copies = sums["mtp_copies"]
    draft = sums["mtp_dense"] + (sums["mtp_expert"] / mtp_copies * topk if mtp_copies else 0.0)
    n_mtp = positive_or(cfg, "num_nextn_predict_layers", 1) or 1
    return ModelOps(
        family=fam,
        hidden=positive_or(cfg, "hidden_size", 1),
        layers=spec.num_layers,
        dense_params=sums["dense"],
        lm_head_params=sums["lm_head"],
        expert_params=sums["expert"],
        moe_layers=moe_layers,
        experts=int(sums["experts"]),
        topk=topk,
        dense_bytes=dense_bytes,
        expert_bytes=expert_bytes,
        draft_layer_params=draft / n_mtp if draft else 0.0,
        groups=tuple(groups),
        kernels_per_layer=(k_attn + k_ffn) / max(spec.num_layers, 1),
        tp=tp,
        attn_tp=attn_tp,
        weight_dtype=wdt,
        expert_dtype=edt,
        act_bytes_per_token=act,
        notes=tuple(notes),
        gemms=gemms,
        gemm_tile=gemm_tile(cfg),
        local_experts=-(-int(sums["experts"]) // ep) if sums["experts"] else 0,
        ep=ep,
    )


ACT_PASSES_HIDDEN = 8  # hidden-wide tensors read or written per layer: 2 norms (in, out), 2 residual adds (2 in, 1 out)
ACT_PASSES_INTER = 3  # MLP intermediate: gate_up output written, read by the activation, its output read by down
HC_PASSES = 6  # DeepSeek-V4 mHC: the hc_mult residual streams read and written by the pre and post mixes (x2 sites)


def activation_bytes(
    *, hidden: int, inter: float, inter_moe: float, moe_layers: int, layers: int, tp: int, hc_mult: int = 1
) -> float:
    """Activation bytes one token moves per rank through all layers (bf16): the elementwise kernels' traffic.

    ``2 x [layers x 8 x hidden + (dense layers x inter + MoE layers x inter_moe) x 3 / tp
    + (hc_mult > 1: layers x 6 x hc_mult x hidden)]``; hidden-wide tensors are whole on every rank after each
    all-reduce, the MLP intermediate is split over TP.  Example: Llama-3.1-8B on one GPU (h 4,096, inter 14,336, 32
    layers): 2 x (32 x 8 x 4096 + 32 x 14336 x 3) = 4,849,664 B per token.
    """
    dense_layers = layers - moe_layers
    per = layers * ACT_PASSES_HIDDEN * hidden + (dense_layers * inter + moe_layers * inter_moe) * ACT_PASSES_INTER / tp
    if hc_mult > 1:
        per += layers * HC_PASSES * hc_mult * hidden
    return 2.0 * per


# ---------------------------------------------------------------------------------------------- per-step terms


def linear_flops(ops: ModelOps, *, tokens: Any, lm_head_tokens: Any) -> tuple[Any, Any]:
    """(dense FLOPs, routed-expert FLOPs) per rank for ``tokens`` tokens: ``2 N_dense B / tp`` (+ the lm_head for
    ``lm_head_tokens``) and ``2 k N_expert L_moe B / tp`` (EP and MoE-TP share a token's experts over the ranks).

    Example (DeepSeek-V4.1-Flash, TP8): N_dense ~ 6.6e9 -> a 2,048-token chunk costs 2 x 6.6e9 x 2048 / 8 =
    3.4e12 dense FLOPs per rank.
    """
    dense = 2.0 * ops.dense_params * tokens / ops.tp + 2.0 * ops.lm_head_params * lm_head_tokens / ops.tp
    expert = 2.0 * ops.topk * ops.expert_params * ops.moe_layers * tokens / ops.tp
    return dense, expert


def weight_bytes(ops: ModelOps, *, tokens: Any) -> tuple[Any, Any]:
    """(dense bytes, routed-expert bytes) streamed per rank by one step of ``tokens`` tokens.

    Example: 384 experts, top-6, a decode step of 1 token: 1.6% of the rank's expert bytes; a chunk of 2,048
    tokens: all of them.
    """
    frac = experts_touched_fraction(tokens=tokens, topk=ops.topk, experts=ops.experts)
    return ops.dense_bytes + 0.0 * tokens, ops.expert_bytes * frac


def keys_attended(g: AttnGroup, *, position: Any) -> Any:
    """Keys a query at ``position`` attends in group ``g``: ``lo(lo(p, window) / ratio, topk) + lo(p, extra)``."""
    p = position
    k = lo(p, g.window) if g.window else p
    k = k / g.ratio
    if g.topk:
        k = lo(k, g.topk)
    if g.extra_keys:
        k = k + lo(p, g.extra_keys)
    return k


#: bytes per (query token, scored entry) the indexer moves: fp32 logits written, then read by the top-k
INDEX_LOGIT_BYTES = 8


def index_entries(g: AttnGroup, *, position: Any) -> Any:
    """Entries the group's indexer layers score for one query at ``position``, summed over its indexer layers:
    ``(indexer layers - capped) x p / ratio + capped x lo(p / ratio, cap)``.

    Example: V4.1's ratio-1 group, indexer layers 20, 24, 28, 32, 36 (four after the candidate source 20, capped
    at 2,048 x 8 = 16,384) at p = 65,536: 1 x 65,536 + 4 x 16,384 = 131,072.
    """
    if not g.index_layers:
        return 0.0 * position
    full = (g.index_layers - g.index_capped_layers) * position / g.ratio
    capped = g.index_capped_layers * lo(position / g.ratio, g.index_cap) if g.index_capped_layers else 0.0
    return full + capped


def attention_flops(g: AttnGroup, *, tokens: Any, position: Any, decode: bool) -> Any:
    """Attention FLOPs per rank for ``tokens`` queries whose mean position is ``position`` (causal: a chunk of n
    tokens starting at p0 has mean position p0 + n/2), all layers of the group, indexer and state updates included.

    ``tokens x (layers x q_heads x keys x flops_per_key + index_flops x index_entries + layers x state)``; the
    indexers of DSA and DeepSeek-V4 are replicated on every rank (SGLang v0.5.23 ``layers/attention/dsa/
    dsa_indexer.py`` and ``layers/attention/dsv4/indexer.py`` ``C4Indexer``: ``ReplicatedLinear`` projections,
    ``n_local_heads = n_heads``), so their FLOPs are not divided by TP.
    Example: GQA 32 heads of 128, one rank, 1,000 queries at mean position 500, 32 layers:
    32 x 1000 x 32 x 500 x 512 = 2.6e11 FLOPs.
    """
    per_key = g.flops_per_key_decode if decode else g.flops_per_key_prefill
    attn = g.layers * tokens * g.q_heads * keys_attended(g, position=position) * per_key
    index = tokens * g.index_flops_per_key * index_entries(g, position=position)
    state = g.layers * tokens * g.state_flops
    return attn + index + state


def kv_read_bytes(g: AttnGroup, *, requests: Any, context: Any) -> Any:
    """KV (and state) bytes one decode step reads per rank: ``requests x layers x keys(L) x bytes per key`` + the
    indexer's keys + linear-attention states read and written.

    Example: GQA 8 KV heads of 128, fp8, TP1, 32 layers, one request at 8,192: 8192 x 32 x 2048 B = 537 MB.
    """
    kv = g.layers * keys_attended(g, position=context) * g.kv_bytes_per_key
    idx = index_entries(g, position=context) * g.index_bytes_per_key
    state = g.layers * 2.0 * g.state_bytes
    return requests * (kv + idx + state)


def index_logit_bytes(g: AttnGroup, *, tokens: Any, position: Any) -> Any:
    """The indexer's logits traffic per rank: ``tokens x entries x 8`` (fp32 written, read by the top-k; the
    indexer is replicated, so every rank moves all of it).  Example: 2,048 queries scoring 131,072 entries:
    2,147,483,648 B."""
    return tokens * index_entries(g, position=position) * INDEX_LOGIT_BYTES


def gemm_tile(cfg: Any) -> tuple[int, int]:
    """(N, K) of the tile a block-scaled fp8 GEMM runs: the checkpoint's ``weight_block_size`` where it is not
    128 x 128 (SGLang v0.5.23 ``kernels/ops/gemm/fp8_kernel.py`` ``w8a8_block_fp8_matmul_triton``: with no tuned
    table for the GPU, ``BLOCK_SIZE_N = block_size[0]``, ``BLOCK_SIZE_K = block_size[1]``, ``BLOCK_SIZE_M = 64``,
    no split-K off SM90; ``fp8_utils.py`` ``dispatch_w8a8_block_fp8_linear`` sends every block other than
    ``[*, 128]`` to that Triton kernel), else :data:`GEMM_TILE_N` x 128.  Example: DeepSeek-V4.1-Flash
    (``weight_block_size [32, 32]``) -> (32, 32); DeepSeek-V4-Flash ([128, 128]) -> (128, 128)."""
    q = cfg.get("quantization_config") if hasattr(cfg, "get") else None
    block = q.get("weight_block_size") if isinstance(q, dict) else None
    if isinstance(block, (list, tuple)) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        return int(block[0]), int(block[1])
    return GEMM_TILE_N, 128


#: the output tile of a block-scaled GEMM with few rows: 128 columns of N by 64 rows of M (vLLM's SM120 CUTLASS
#: blockwise FP8 GEMM for M <= 256, ``Shape<_64,_128,_128>``, vllm-project/vllm PR 37970; SGLang's Triton
#: ``w8a8_block_fp8_matmul`` tiles N by the weight's 128-column scale block)
GEMM_TILE_N = 128
GEMM_TILE_M = 64


def narrow_gemm_seconds(ops: ModelOps, *, tokens: Any, bw: float, tile_gbs: float) -> Any:
    """Seconds the quantized GEMMs of a step take beyond streaming their weights at ``bw`` (B/s), because a GEMM of
    few rows launches few thread blocks and each block streams at most ``tile_gbs`` GB/s (the GPU class's
    measured rate per output tile, :mod:`kvplan.perf.efficiency`):

    ``tiles = ceil(n / 128) x ceil(M / 64)`` (routed experts: x the experts the step touches on the rank, at least
    one), ``rate = min(bw, tiles x tile_gbs)``, and each GEMM adds ``bytes x (1 / rate - 1 / bw)``.  Wide GEMMs
    and prefill chunks (many row tiles) reach ``bw`` and add nothing; bf16 weights (cuBLAS picks split-K for few
    rows) are not charged.

    Example: DeepSeek-V4.1-Flash's shared-expert gate_up at TP8 on one decode token: n = 576, 5 tiles x 40 GB/s =
    200 GB/s against 0.8 x 1,792 = 1,434 GB/s; its 2.95 MB (fp8) take 14.7 us instead of 2.1 us: +12.7 us per
    layer.
    """
    if not tile_gbs or not ops.gemms:
        return 0.0 * tokens
    r128 = tile_gbs * 1e9
    # a tile streams at the rate its loads in flight allow (Little's law: bytes in flight / memory latency), so at
    # the same pipeline depth in proportion to its N x K area: the measured rate is of 128 x 128 tiles.  The
    # checkpoint's block tile is the dense block-FP8 GEMMs'; the routed experts run the MoE runner's own kernel
    r_dense = r128 * ops.gemm_tile[0] * ops.gemm_tile[1] / (GEMM_TILE_N * 128)
    m_tiles = (tokens + GEMM_TILE_M - 1) // GEMM_TILE_M
    m_tiles = hi(m_tiles, 1.0)
    frac = experts_touched_fraction(tokens=tokens, topk=ops.topk, experts=ops.experts)
    touched = ops.local_experts * frac
    total: Any = 0.0 * tokens
    for g in ops.gemms:
        if not g.quantized:
            continue
        if g.expert:
            r = r128
            tiles = -(-g.n // GEMM_TILE_N) * hi(touched, 1.0)
            nbytes = g.nbytes * touched * g.count
        else:
            r = r_dense
            tiles = -(-g.n // ops.gemm_tile[0]) * m_tiles
            nbytes = g.nbytes * g.count
        rate = lo(bw, tiles * r)
        total = total + nbytes * (1.0 / rate - 1.0 / bw)
    return total

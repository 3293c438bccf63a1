"""The engine's schedule, one step at a time: prefill chunks, decode steps, CUDA graphs, speculative steps.

A step's time on one rank (all ranks balanced) is the sum of its parts, each attributed to one of four bounds:

* per op group (dense linear, routed experts, each attention group): ``max(FLOPs / (peak x compute eff),
  bytes / (bandwidth x memory eff))`` -- compute- or memory-bound, whichever is larger; the routed experts' grouped
  GEMMs at the class's grouped-GEMM fraction (:func:`kvplan.perf.efficiency.expert_compute`);
* collectives (:mod:`kvplan.perf.comm`) -- communication;
* kernels x per-kernel cost (graph replay or eager launch) + the per-step host cost -- overhead.

Prefill (one cold request of S tokens alone): chunks of ``chunk`` tokens (SGLang ``--chunked-prefill-size``, vLLM
``--max-num-batched-tokens``; SGLang v0.5.23 ``managers/schedule_policy.py`` ``PrefillAdder`` cuts a long prompt into
chunks of that size, the last one shorter), chunk i attending the prefix so far (mean position p0 + n/2).
CUDA graphs: SGLang captures decode graphs by default; whether a prefill step is captured is the release's own rule
(:mod:`kvplan.perf.graphs`: none before 0.5.10, "breakable" graphs on CUDA from 0.5.14 except DeepSeek-V4 on every
GPU, ``model_executor/cuda_graph_config.py`` ``default_prefill_backend``, ``arg_groups/cuda_graph_hook.py``).
``--disable-cuda-graph`` (SGLang) / ``--enforce-eager`` (vLLM) make both phases eager.  vLLM V1 runs piecewise
CUDA graphs for batches up to its largest capture size (512 tokens) and compiled (Inductor) eager code above it.

Decode at concurrency C and context L: one step carries C x tokens-per-step tokens (1 without speculation; the
verify width with it), reads the dense weights, the experts those tokens touch, every request's KV at L, and runs
the collectives for those tokens.  Speculative decoding (SGLang ``speculative/eagle_worker.py``, ``dspark``):

* EAGLE / EAGLE3 / NEXTN / MTP (chain, topk 1): ``num_steps`` draft forwards of one draft layer, then one target
  verify of ``num_draft_tokens`` tokens per request; tokens per step = the accept length;
* DSPARK: one parallel draft forward of a block of ``block_size`` tokens, a verify of block + 1 tokens;
* NGRAM: no draft model, a verify of ``num_draft_tokens``.

Accept length: given (``--accept-length``), else ``(1 - a ** (n + 1)) / (1 - a)`` for n drafted tokens with a
per-token acceptance ``a`` = :data:`DEFAULT_ACCEPTANCE` (0.7: DeepSeek-V3's technical report measures 85-90% for
the first MTP token; acceptance falls along a chain, and 0.7 gives EAGLE-3's reported ~3 tokens at 3-4 drafts).
"""

from __future__ import annotations

from typing import Any

from kvplan.perf.comm import (
    CUSTOM_ALLREDUCE_PCIE_S,
    allreduce_time,
    custom_allreduce_pcie,
    layer_collectives,
    nccl_allreduce_time,
    nccl_only,
)
from kvplan.perf.efficiency import Efficiency, expert_compute
from kvplan.perf.hardware import Hardware
from kvplan.perf.moe import moe_block_m, padded_rows_factor, topk_copy_bytes
from kvplan.perf.ops import (
    ModelOps,
    attention_flops,
    hi,
    index_logit_bytes,
    kv_read_bytes,
    linear_flops,
    narrow_gemm_seconds,
    weight_bytes,
)
from kvplan.perf.record import Record

DEFAULT_ACCEPTANCE = 0.7
BOUNDS = ("compute", "memory", "communication", "overhead")
VLLM_MAX_CAPTURE = 512  # vLLM V1 compilation_config max_cudagraph_capture_size default
DRAFT_KERNELS = 25  # one draft layer + its head


class Knobs(Record):
    """The engine knobs a step depends on (one frozen context object)."""

    engine: str = "sglang"
    chunk: int = 8192  # prefill tokens per step
    prefill_graph: bool = False
    decode_graph: bool = True
    spec_algorithm: str | None = None
    spec_steps: int = 0  # draft forwards per step
    spec_draft_tokens: int = 0  # verify width per request (tokens)
    accept_length: float = 1.0
    accept_source: str = ""


class Part(Record, frozen=False):
    """One line of a step's breakdown."""

    name: str
    flops: float = 0.0
    nbytes: float = 0.0
    coll_bytes: float = 0.0
    seconds: float = 0.0
    bound: str = "compute"


class Step(Record, frozen=False):
    """A step (or a sum of steps): its parts, summed by bound."""

    parts: list[Part]

    def __init__(self, parts: list[Part] | None = None) -> None:
        super().__init__(parts=[] if parts is None else parts)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.parts)  # an array for array inputs

    def by_bound(self) -> dict[str, float]:
        out = dict.fromkeys(BOUNDS, 0.0)
        for p in self.parts:
            out[p.bound] += p.seconds
        return out

    def shares(self) -> dict[str, float]:
        t = self.seconds
        return {k: (v / t if t else 0.0) for k, v in self.by_bound().items()}

    def bound(self) -> str:
        b = self.by_bound()
        return max(BOUNDS, key=lambda k: b[k])

    def add(self, other: Step, times: float = 1.0) -> None:
        """Accumulate ``other`` x ``times`` part by part (same names add up)."""
        index = {p.name: p for p in self.parts}
        for p in other.parts:
            q = index.get(p.name)
            if q is None:
                q = Part(p.name, bound=p.bound)
                self.parts.append(q)
                index[p.name] = q
            q.flops += p.flops * times
            q.nbytes += p.nbytes * times
            q.coll_bytes += p.coll_bytes * times
            q.seconds += p.seconds * times


def collective_time(hw: Hardware, eff: Efficiency, *, nbytes: Any, ranks: int) -> Any:
    """One all-reduce of ``nbytes`` over ``ranks`` GPUs of ``hw``: NCCL's protocol choice where the engines use NCCL
    for every size (more than two GPUs without NVLink, :func:`kvplan.perf.comm.nccl_only`), else alpha-beta (the
    engines' custom all-reduce, and NCCL beyond its size, over NVLink); two PCIe GPUs with P2P pay the custom
    kernel's own latency for messages up to 8 MB (:func:`kvplan.perf.comm.custom_allreduce_pcie`)."""
    bus = hw.link_gbs * eff.link
    if nccl_only(link=hw.link, ranks=ranks):
        return nccl_allreduce_time(nbytes=nbytes, ranks=ranks, bus_gbs=bus, alpha_s=eff.alpha_s)
    t = allreduce_time(nbytes=nbytes, ranks=ranks, bus_gbs=bus, alpha_s=eff.alpha_s)
    custom = custom_allreduce_pcie(link=hw.link, p2p=hw.p2p, ranks=ranks, nbytes=nbytes)
    if isinstance(custom, bool):
        return t - (eff.alpha_s - CUSTOM_ALLREDUCE_PCIE_S) if custom else t
    return t - custom * (eff.alpha_s - CUSTOM_ALLREDUCE_PCIE_S)


def _op(name: str, flops: float, nbytes: float, *, peak: float, bw: float) -> Part:
    tc, tm = flops / peak, nbytes / bw
    t = hi(tc, tm)
    if isinstance(t, (int, float)):
        return Part(name, flops, nbytes, 0.0, float(t), "compute" if tc >= tm else "memory")
    # arrays (issue 23's sweeps): the time is exact per element; the part's label is the first element's bound
    ge: Any = tc >= tm
    first = bool(ge.flat[0])
    return Part(name, flops, nbytes, 0.0, t, "compute" if first else "memory")


def step(
    ops: ModelOps,
    hw: Hardware,
    eff: Efficiency,
    *,
    tokens: float,
    requests: float,
    position: float,
    decode: bool,
    graph: bool,
) -> Step:
    """One forward of ``tokens`` tokens (``requests`` requests whose queries sit at mean ``position``; decode reads
    every request's KV at ``position``): the parts of :class:`Step` (module docstring)."""
    bw = hw.memory_gbs * 1e9 * eff.memory
    lm_tokens = tokens if decode else 1.0
    f_dense, f_exp = linear_flops(ops, tokens=tokens, lm_head_tokens=lm_tokens)
    b_dense, b_exp = weight_bytes(ops, tokens=tokens)
    parts = [_op("dense linear", f_dense, b_dense, peak=hw.peak_flops(ops.weight_dtype) * eff.compute, bw=bw)]
    if ops.moe_layers:
        exp_peak = hw.peak_flops(ops.expert_dtype) * expert_compute(eff)
        routed = _op("routed experts", f_exp, b_exp, peak=exp_peak, bw=bw)
        parts.append(routed)
        bm = moe_block_m(tokens=tokens, experts=ops.experts)
        pad = padded_rows_factor(tokens=tokens, topk=ops.topk, experts=ops.experts, block_m=bm)
        padded = _op("", f_exp * pad, b_exp, peak=exp_peak, bw=bw)
        parts.append(
            Part(
                "routed experts: rows padded to BLOCK_SIZE_M (moe_align_block_size)",
                f_exp * (pad - 1),
                seconds=hi(padded.seconds - routed.seconds, 0.0),  # never below the unpadded (float rounding)
                bound="compute",
            )
        )
        copies = topk_copy_bytes(tokens=tokens, topk=ops.topk, hidden=ops.hidden, moe_layers=ops.moe_layers, ep=ops.ep)
        parts.append(
            _op("routed experts: top-k activation copies (gather, outputs, sum)", 0.0, copies, peak=1.0, bw=bw)
        )
    narrow = narrow_gemm_seconds(ops, tokens=tokens, bw=bw, tile_gbs=eff.gemm_tile_gbs)
    if eff.gemm_tile_gbs and ops.gemms:
        parts.append(Part("weight streaming of few-row GEMMs (tile-limited)", seconds=narrow, bound="memory"))
    if ops.act_bytes_per_token:
        parts.append(_op("activations (norms, residuals, mHC)", 0.0, ops.act_bytes_per_token * tokens, peak=1.0, bw=bw))
    attn_peak = hw.peak_flops("bf16") * eff.attention
    for g in ops.groups:
        fl = attention_flops(g, tokens=tokens, position=position, decode=decode)
        kv = kv_read_bytes(g, requests=requests, context=position + (0.0 if decode else tokens / 2))
        kv = kv + index_logit_bytes(g, tokens=tokens, position=position)
        parts.append(_op(f"attention: {g.kind} x{g.layers}", fl, kv, peak=attn_peak, bw=bw))
    for name, ranks, nbytes, count in layer_collectives(
        tokens=tokens, hidden=ops.hidden, tp=ops.tp, attn_tp=ops.attn_tp
    ):
        n = count * ops.layers
        t = collective_time(hw, eff, nbytes=nbytes, ranks=ranks) * n
        parts.append(Part(f"{name} x{n}", 0.0, 0.0, nbytes * n, t, "communication"))
    per_kernel = eff.kernel_graph_s if graph else eff.kernel_eager_s
    kernels = ops.kernels_per_layer * ops.layers
    label = "graph replay" if graph else "eager launch"
    parts.append(
        Part(
            f"kernels: {kernels:,.0f} x {per_kernel * 1e6:.1f} us ({label})",
            seconds=kernels * per_kernel,
            bound="overhead",
        )
    )
    parts.append(Part("scheduler + sampling per step", seconds=eff.step_s, bound="overhead"))
    return Step(parts)


class Prefill(Record, frozen=False):
    seconds: float
    chunks: int
    step: Step  # summed over the chunks
    chunk_step: Step  # the last full chunk (the per-chunk breakdown shown)


def prefill(ops: ModelOps, hw: Hardware, eff: Efficiency, knobs: Knobs, *, input_len: int) -> Prefill:
    """The chunks of one cold request of ``input_len`` tokens, alone on the server.

    Chunks: ``ceil(S / chunk)``; full chunks of ``chunk`` tokens, the last one the rest.  Example: S = 131,072,
    chunk 2,048 -> 64 chunks, the last starting at position 129,024 (mean position 130,048).
    """
    chunk = max(1, int(knobs.chunk))
    total = Step()
    n_full, rest = divmod(int(input_len), chunk)
    last_full: Step | None = None
    graph = knobs.prefill_graph
    # full chunks: group them in up to 16 bands of equal prefix length (exact for linear terms, close for capped)
    bands = min(n_full, 16)
    done = 0
    for b in range(bands):
        count = n_full * (b + 1) // bands - n_full * b // bands
        mid = (done + count / 2) * chunk  # mean query position of the band's chunks
        s = step(ops, hw, eff, tokens=float(chunk), requests=1.0, position=mid, decode=False, graph=graph)
        total.add(s, count)
        last_full = s
        done += count
    if rest:
        s = step(
            ops,
            hw,
            eff,
            tokens=float(rest),
            requests=1.0,
            position=n_full * chunk + rest / 2,
            decode=False,
            graph=graph,
        )
        total.add(s)
        last_full = last_full or s
    assert last_full is not None
    return Prefill(total.seconds, n_full + (1 if rest else 0), total, last_full)


#: the chain drafts whose worker runs a draft prefill ("draft extend") over the prompt before the extend batch returns
EAGLE_CLASS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "MTP"})


def draft_prefill(ops: ModelOps, eff: Efficiency, knobs: Knobs, *, prefill: Prefill) -> Step:
    """The draft model's prefill over the prompt, part of the request's prefill under an EAGLE-class algorithm:
    SGLang's EAGLE worker runs the target's extend and then, in the same ``forward_batch_generation``, the draft
    extend over the same tokens (v0.5.23 ``speculative/eagle_worker_v2.py`` ``_forward_prefill_batch``: "Target
    prefill", then "Draft prefill"), so the first token returns after both.  The draft is one decoder layer (an
    MTP / NextN layer of the checkpoint): modelled as one average layer of the target's own chunks, each part of
    the prefill that scales with the layers (linear layers, experts, activations, attention, collectives) divided by
    ``ops.layers``, plus :data:`DRAFT_KERNELS` launches per chunk at the prefill's per-kernel cost.  Nothing for
    other algorithms or a checkpoint without a draft layer.

    Example: a 43-layer target whose one-chunk prefill spends 120 ms in layer parts and runs eager at 15 us per
    kernel: 120 / 43 + 25 x 0.015 = 2.79 + 0.375 = 3.17 ms.
    """
    out = Step()
    if (knobs.spec_algorithm or "").upper() not in EAGLE_CLASS or not ops.draft_layer_params:
        return out
    per = 1.0 / max(ops.layers, 1)
    for p in prefill.step.parts:
        if p.bound == "overhead":
            continue
        out.parts.append(
            Part(
                f"draft prefill: {p.name}", p.flops * per, p.nbytes * per, p.coll_bytes * per, p.seconds * per, p.bound
            )
        )
    per_kernel = eff.kernel_graph_s if knobs.prefill_graph else eff.kernel_eager_s
    out.parts.append(
        Part("draft prefill: kernels", seconds=DRAFT_KERNELS * per_kernel * prefill.chunks, bound="overhead")
    )
    return out


class Decode(Record, frozen=False):
    step_seconds: float  # one engine step (draft + verify with speculation)
    tokens_per_step: float  # per request
    step: Step


def decode(ops: ModelOps, hw: Hardware, eff: Efficiency, knobs: Knobs, *, concurrency: float, context: float) -> Decode:
    """One decode step at ``concurrency`` requests at context ``context``, speculative steps included."""
    graph = knobs.decode_graph
    width = float(knobs.spec_draft_tokens) if knobs.spec_algorithm else 1.0
    total = step(
        ops, hw, eff, tokens=concurrency * width, requests=concurrency, position=context, decode=True, graph=graph
    )
    if knobs.spec_algorithm and knobs.spec_steps and ops.draft_layer_params:
        bw = hw.memory_gbs * 1e9 * eff.memory
        peak = hw.peak_flops(ops.weight_dtype) * eff.compute
        per_kernel = eff.kernel_graph_s if graph else eff.kernel_eager_s
        for _ in range(int(knobs.spec_steps)):
            fl = 2.0 * (ops.draft_layer_params + ops.lm_head_params) * concurrency / ops.tp
            by = (
                (ops.draft_layer_params + ops.lm_head_params)
                * ops.dense_bytes
                / max(ops.dense_params + ops.lm_head_params, 1.0)
            )
            d = Step(
                [
                    _op("draft forward", fl, by, peak=peak, bw=bw),
                    Part("draft kernels", seconds=DRAFT_KERNELS * per_kernel, bound="overhead"),
                ]
            )
            for name, ranks, nbytes, count in layer_collectives(
                tokens=concurrency, hidden=ops.hidden, tp=ops.tp, attn_tp=ops.attn_tp
            ):
                t = collective_time(hw, eff, nbytes=nbytes, ranks=ranks)
                d.parts.append(
                    Part(f"draft {name}", 0.0, 0.0, float(nbytes * count), float(t * count), "communication")
                )
            total.add(d)
    return Decode(total.seconds, knobs.accept_length, total)


def default_accept_length(drafted: int, acceptance: float = DEFAULT_ACCEPTANCE) -> float:
    """Expected tokens per step for a chain of ``drafted`` draft tokens: ``(1 - a ** (n + 1)) / (1 - a)``.

    Example: n = 3, a = 0.7 -> (1 - 0.2401) / 0.3 = 2.533.
    """
    return (1 - acceptance ** (drafted + 1)) / (1 - acceptance)

"""vLLM KV-cache groups: block-size unification for Mamba hybrids, layers into groups, blocks per request.

Read in the vLLM 0.33.0 wheel (``vllm-project/vllm`` commit 4ba787ec9): ``vllm/v1/core/kv_cache_planning.py``
``get_kv_cache_groups``, ``_get_kv_cache_groups_uniform_page_size``, ``unify_kv_cache_spec_page_size``,
``_get_packed_kv_cache_groups``, ``_approximate_gcd``; ``vllm/platforms/interface.py``
``Platform._align_hybrid_block_size``; ``vllm/v1/kv_cache_interface.py`` ``max_memory_usage_bytes``.

* One group when every layer has the same spec or the layers are of one type (full + MLA + indexer share it,
  ``UniformTypeKVCacheSpecs``): bytes per block = Σ layer pages.
* Otherwise (hybrids) pages are unified to the largest, layers are bucketed by spec and dealt round-robin into
  equal-size groups (group size = min layers per bucket, or max when max < 1.5 × min); bytes per block =
  group size × the unified page.
* DeepSeek-V4 (:data:`GROUPERS`): its block-256 / SWA / state buckets, packed (≥0.33) or as layer tuples (≤0.32),
  see :func:`group_dsv4`.
* MLA hybrids (Kimi-Linear): the attention block that holds a KDA state page is aligned by the MLA backend vLLM
  picks for the GPU (:func:`vllm_mla_backend`, :func:`hybrid_alignment`; ≤0.19 64, 0.20-0.26 the backend's
  kernel block, ≥0.27 at least 128).

Example: Gemma-3-27B (10 full + 52 sliding layers, 16 KV heads × 256 B × 2, block 16): group size 10 ->
1 full + 6 sliding groups, bytes per block 10 × 16 × 16 × 256 × 2 = 1,310,720.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from kvplan.engines.backends import AttentionBackend, VllmBackend
from kvplan.engines.vllm.releases import DsV4Grouping, Release, Version
from kvplan.engines.vllm.specs import LAYER_KINDS, LayerKV, ModelKV
from kvplan.errors import InputError
from kvplan.family import FAMILY_SPECS, Family, resolve


@dataclass
class Group:
    """One KV-cache group: its layers, block size and page (uniform) or per-layer pages (one-type groups)."""

    kind: str
    layers: list[LayerKV]
    block_size: int
    page: int  # page bytes of one layer of the group (uniform page)
    window: int | None = None
    pages: dict[str, int] = field(default_factory=dict)  # per-layer page (uniform-type groups)
    bpb_override: int | None = None

    def bytes_per_block(self, names: set[str] | None = None) -> int:
        """Bytes one block of this group takes (over ``names`` only: the layers one PP stage holds)."""
        if self.bpb_override is not None:
            return self.bpb_override
        ls = self.layers if names is None else [x for x in self.layers if x.name in names]
        if self.pages:
            return sum(self.pages[x.name] for x in ls)
        return self.page * len(ls)


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers."""
    return -(-a // b)


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """Chunk size in [lower_bound, max] minimising Σ upward padding; ties -> larger
    (``kv_cache_planning.py`` ``_approximate_gcd``, v0.33.0).  Example: ([21, 22], 22) -> 22."""
    lo = max(1, lower_bound)
    hi = max(values)
    if lo > hi:
        return lo
    best, best_pad = lo, None
    for d in range(lo, hi + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _attn_kind(kind: str) -> str:
    """Grouping type (``group_as`` of :data:`kvplan.engines.vllm.specs.LAYER_KINDS`): full and MLA (and indexer)
    are all full-attention-like."""
    row = LAYER_KINDS.get(kind)
    return row.group_as if row is not None else kind


def hybrid_block_size(
    *, attn_token_bytes: int, mamba_state_bytes: int, block_size: int, kernel_min_block: int = 16, mla: bool = False
) -> int:
    """Attention block size that makes the attention page ≥ the Mamba page
    (``Platform._align_hybrid_block_size``, v0.33.0)::

        align = max(kernel_min_block, block_size)  (≥128 for MLA hybrids)
        bs    = align × cdiv(mamba_page, align × attn_bytes_per_token)

    Example, Qwen3-Next TP2 bf16: align 16, attention 1,024 B/token, GDN state 548,864 B ->
    16 × cdiv(548,864, 16,384) = 16 × 34 = 544.
    """
    align = max(kernel_min_block, block_size)
    if mla:
        align = max(align, 128)
    bs = align * cdiv(mamba_state_bytes, align * attn_token_bytes)
    bs = kernel_min_block * cdiv(bs, kernel_min_block)
    return max(bs, block_size)


def mamba_all_block_sizes(
    *, attn_token_bytes: int, mamba_state_bytes: int, block_size: int, chunk_size: int, kernel_min_block: int = 16
) -> tuple[int, int]:
    """(attention block, Mamba block) when prefix caching keeps one Mamba state per block (cache mode "all",
    ``HybridAttentionMambaModelConfig.verify_and_update_config`` v0.11.2 - v0.19.0 ``model_executor/models/
    config.py``, ``Platform._align_hybrid_block_size`` v0.22.0)::

        step       = lcm(chunk, max(kernel_min_block, block_size))
        mamba_bs   = step × cdiv(cdiv(mamba_page, attn_bytes_per_token), step)
        attn_bs    = max(block_size, mamba_bs)

    ``chunk`` is the config's ``mamba_chunk_size``, else ``chunk_size``, else 2,048 (``ModelConfig.
    get_mamba_chunk_size``).  Example: a 1,048,576 B state, 4,096 attention B/token, chunk 128, block 16:
    cdiv(1,048,576, 4,096) = 256 tokens -> lcm(128, 16) = 128 × cdiv(256, 128) = 256 (the "none" rule gives
    16 × cdiv(1,048,576, 65,536) = 256 too; a 1,114,112 B state gives 272 tokens: "all" 384, "none" 272)."""
    step = math.lcm(chunk_size, max(kernel_min_block, block_size))
    mamba_bs = step * cdiv(cdiv(mamba_state_bytes, attn_token_bytes), step)
    return max(block_size, mamba_bs), mamba_bs


# --------------------------------------------------------------------------- MLA hybrids: the backend picks the block


@dataclass(frozen=True)
class MlaBackend:
    """One vLLM MLA attention backend as the selector and ``_align_hybrid_block_size`` see it (v0.25.1
    ``vllm/v1/attention/backends/mla/<backend>.py``): ``get_supported_kernel_block_sizes`` (``multiple_of`` for a
    ``MultipleOf(n)`` entry, else the fixed ``sizes``), ``supports_compute_capability`` (``sm_majors``; None = any),
    ``supported_kv_cache_dtypes`` (``fp8_kv``) and FlashInfer-MLA's ``qk_nope_head_dim in [64, 128, 192]``."""

    name: VllmBackend
    sizes: tuple[int, ...] = ()
    multiple_of: int | None = None
    sm_majors: frozenset[int] | None = None
    fp8_kv: bool = True
    nope_dims: frozenset[int] | None = None

    @property
    def min_kernel_block(self) -> int:
        """The smallest kernel block (``MultipleOf(n)`` -> n): the hybrid alignment of vLLM ≥0.20."""
        return self.multiple_of or min(self.sizes)

    def supports_block_size(self, block_size: int) -> bool:
        """``AttentionBackend.supports_block_size`` (a multiple of n, or one of the fixed sizes)."""
        return block_size % self.multiple_of == 0 if self.multiple_of else block_size in self.sizes

    def preferred_block_size(self, default: int = 16) -> int:
        """``get_preferred_block_size(16)``: 16 when supported, else the smallest kernel block (v0.25.1
        ``v1/attention/backend.py``).  Example: FLASHINFER_MLA (32, 64) -> 32; FLASH_ATTN_MLA -> 16."""
        return default if self.supports_block_size(default) else self.min_kernel_block

    def accepts(
        self, *, sm_major: int, kv_quantized: bool, qk_nope_head_dim: int | None, block_size: int | None
    ) -> bool:
        """The selector's checks for this backend (``validate_configuration``, v0.25.1)."""
        return (
            (self.sm_majors is None or sm_major in self.sm_majors)
            and (self.fp8_kv or not kv_quantized)
            and (self.nope_dims is None or qk_nope_head_dim in self.nope_dims)
            and (block_size is None or self.supports_block_size(block_size))
        )


#: vLLM's dense MLA backends (v0.25.1; the same kernel block sizes in 0.20.0 and 0.34.0).  TOKENSPEED_MLA (SM100,
#: after FLASHINFER_MLA) needs the optional ``tokenspeed_mla`` package and is never reached before FLASHINFER_MLA
#: for DeepSeek-style dims, so it is left out.
MLA_BACKENDS: Mapping[VllmBackend, MlaBackend] = {
    b.name: b
    for b in (
        MlaBackend(VllmBackend.FLASH_ATTN_MLA, multiple_of=16, sm_majors=frozenset({9}), fp8_kv=False),
        MlaBackend(VllmBackend.FLASHMLA, sizes=(64,), sm_majors=frozenset({9, 10})),
        MlaBackend(
            VllmBackend.FLASHINFER_MLA, sizes=(32, 64), sm_majors=frozenset({10}), nope_dims=frozenset({64, 128, 192})
        ),
        MlaBackend(VllmBackend.CUTLASS_MLA, sizes=(128,), sm_majors=frozenset({10})),
        MlaBackend(VllmBackend.TRITON_MLA, multiple_of=16),
    )
}

#: the dense MLA priority list per SM major (``platforms/cuda.py`` ``_get_backend_priorities``, v0.25.1; 0.20.0
#: has no SM12 row, its default list ends in TRITON_MLA on SM12 all the same); other majors take ``None``'s row
MLA_PRIORITIES: Mapping[int | None, tuple[VllmBackend, ...]] = {
    10: (
        VllmBackend.FLASHINFER_MLA,
        VllmBackend.CUTLASS_MLA,
        VllmBackend.FLASH_ATTN_MLA,
        VllmBackend.FLASHMLA,
        VllmBackend.TRITON_MLA,
    ),
    12: (VllmBackend.TRITON_MLA,),
    None: (VllmBackend.FLASH_ATTN_MLA, VllmBackend.FLASHMLA, VllmBackend.FLASHINFER_MLA, VllmBackend.TRITON_MLA),
}

#: vLLM releases where the MLA-hybrid rule changed (wheels read: 0.11.2, 0.12.0, 0.16.0, 0.18.0, 0.19.0 old rule;
#: 0.20.0, 0.21.0, 0.25.1, 0.26.0 backend rule; 0.27.0, 0.29.0, 0.34.0 the 128 floor)
MLA_BACKEND_RULE_FROM = (0, 20, 0)
MLA_128_FLOOR_FROM = (0, 27, 0)


def _backend_name(requested: str) -> VllmBackend:
    """vLLM's MLA backend for an ``--attention-backend`` value: upper case, ``_MLA`` added where vLLM's MLA
    backend of that kernel family carries it (``flashinfer`` -> FLASHINFER_MLA, ``flash_attn`` -> FLASH_ATTN_MLA,
    ``triton`` -> TRITON_MLA; ``flashmla`` and ``cutlass_mla`` as given); an undeclared name passes through."""
    name = VllmBackend.of_flag(requested)
    return name if name in MLA_BACKENDS else VllmBackend.of_flag(f"{name}_MLA")


def vllm_mla_backend(
    *,
    sm_major: int | None,
    kv_quantized: bool = False,
    qk_nope_head_dim: int | None = None,
    block_size: int | None = None,
    requested: AttentionBackend | None = None,
) -> tuple[MlaBackend, str]:
    """The MLA backend vLLM picks (the first of :data:`MLA_PRIORITIES` for the GPU that accepts the deployment,
    ``CudaPlatform.get_valid_backends`` / ``get_attn_backend_cls``, v0.25.1) and why; ``requested`` (the
    ``--attention-backend`` flag) wins.  An unknown GPU (``sm_major`` None) is taken as SM90.

    Example: H100 (SM90), bf16 KV -> FLASH_ATTN_MLA; H100 fp8 KV -> FLASHMLA (FA-MLA has no fp8 cache);
    B200 -> FLASHINFER_MLA; A100 / RTX 3090 / RTX PRO 6000 -> TRITON_MLA."""
    if requested:
        name = _backend_name(requested)
        if name not in MLA_BACKENDS:
            raise InputError(
                f"vLLM has no dense MLA attention backend '{requested}'",
                field="--attention-backend",
                hint="use one of " + ", ".join(sorted(MLA_BACKENDS)),
            )
        return MLA_BACKENDS[name], "given (--attention-backend)"
    sm = 9 if sm_major is None else sm_major
    for name in MLA_PRIORITIES.get(sm, MLA_PRIORITIES[None]):
        b = MLA_BACKENDS[name]
        if b.accepts(sm_major=sm, kv_quantized=kv_quantized, qk_nope_head_dim=qk_nope_head_dim, block_size=block_size):
            where = "GPU unknown, SM90 assumed" if sm_major is None else f"SM{sm}x"
            return b, (
                f"vLLM's first MLA backend for {where}{', fp8 KV' if kv_quantized else ''}; "
                "--attention-backend overrides"
            )
    return MLA_BACKENDS[VllmBackend.TRITON_MLA], "no other MLA backend accepts this deployment"


@dataclass(frozen=True)
class HybridAlignment:
    """The arguments :func:`hybrid_block_size` gets for one deployment, and the assumption line behind them."""

    block_size: int  # the attention block before alignment (the backend's preferred, or --block-size)
    kernel_min_block: int  # alignment of the raised block
    mla: bool = False  # the ≥0.27 floor of 128 for MLA hybrids
    backend: VllmBackend | None = None
    note: str | None = None


def align_hybrid_pages(
    model: ModelKV, *, block_size: int, warnings: list[str], align: HybridAlignment | None = None
) -> tuple[ModelKV, int]:
    """A Mamba / KDA hybrid's attention block and state pages as vLLM unifies them: the attention block grows
    (:func:`hybrid_block_size`, aligned as ``align`` says; None: to 16) until its page holds the largest state page,
    then every state page is padded to exactly that attention page.  Returns (the model with the padded state
    pages, the block size); appends vLLM's two log lines to ``warnings`` when it raises the block / pads a state.
    A model without state pages comes back unchanged.  The one place kvplan writes this rule: ``kvplan fit``
    (:mod:`kvplan.engines.vllm.planner`) and ``kvplan show`` (:func:`kvplan.planning.show.vllm_group_rows`) call it.

    Formula::

        bs        = hybrid_block_size(attn_bytes_per_token, max_state_page, align)   (>= block_size)
        attn_page = bs x attn_bytes_per_token;   every state page := attn_page

    Example, Qwen3-Next TP2 bf16 (attention 1,024 B/token/layer, GDN state 548,864 B, block 16, align 16):
    bs = 16 x cdiv(548,864, 16 x 1,024) = 16 x 34 = 544; attn page 544 x 1,024 = 557,056 B; state padded by
    (557,056 - 548,864) / 548,864 = 1.49%.

    Source: vllm-project/vllm vllm/platforms/interface.py ``Platform._align_hybrid_block_size`` ("Use minimum
    block size that satisfies both backend alignment and mamba page size compatibility", "Pad mamba page size to
    exactly match attention page size"), v0.34.0 wheel.
    """
    max_mamba = model.max_mamba_state_bytes
    if not max_mamba:
        return model, block_size
    a = align or HybridAlignment(block_size, 16)
    new_bs = hybrid_block_size(
        attn_token_bytes=model.attn_token_bytes_1layer,
        mamba_state_bytes=max_mamba,
        block_size=a.block_size,
        kernel_min_block=a.kernel_min_block,
        mla=a.mla,
    )
    return pad_state_pages(model, block_size=new_bs, was=block_size, warnings=warnings), new_bs


def pad_state_pages(model: ModelKV, *, block_size: int, was: int, warnings: list[str]) -> ModelKV:
    """Every state page padded to the attention page of ``block_size`` tokens (the block vLLM settled on; ``was``
    the block before it), with vLLM's two log lines when the block grew / a state page is padded.  Shared by the
    "align"/"none" rule (:func:`align_hybrid_pages`) and Mamba cache mode "all" (the planner's chunk-aligned
    block, :func:`mamba_all_block_sizes`).

    Example: block 544 (was 16), attention 1,024 B/token, largest state 548,864 B -> every state page 557,056 B,
    "Padding mamba page size by 1.49% ...".

    Source: vllm-project/vllm vllm/platforms/interface.py ``Platform._align_hybrid_block_size`` (the
    ``logger.info`` lines and "Pad mamba page size to exactly match attention page size"), v0.34.0 wheel.
    """
    if block_size != was:
        warnings.append(
            f"Setting attention block size to {block_size} tokens to ensure that attention page size is "
            ">= mamba page size."
        )
    attn_page = block_size * model.attn_token_bytes_1layer
    max_mamba = model.max_mamba_state_bytes
    if attn_page > max_mamba:
        warnings.append(
            f"Padding mamba page size by {100 * (attn_page - max_mamba) / max_mamba:.2f}% to ensure "
            "that mamba page size and attention page size are exactly equal."
        )
    layers = tuple(replace(x, state_bytes=attn_page) if x.kind == "mamba" else x for x in model.layers)
    return replace(model, layers=layers)


def hybrid_alignment(
    model: ModelKV,
    *,
    block_size: int,
    engine_version: Version,
    block_size_given: bool = False,
    sm_major: int | None = None,
    attention_backend: AttentionBackend | None = None,
) -> HybridAlignment:
    """How a Mamba / KDA hybrid's attention block is aligned to hold one state page, by release.

    Only MLA hybrids (Kimi-Linear) depend on the GPU; other hybrids keep ``(block_size, 16)``:

    * ≤0.19 (``HybridAttentionMambaModelConfig.verify_and_update_config``, ``model_executor/models/config.py``,
      0.11.2 / 0.12.0 / 0.16.0; ``platforms/interface.py`` 0.18.0): align 128 with CUTLASS_MLA, else 64;
    * ≥0.20 (``Platform.update_block_size_for_backend`` / ``_align_hybrid_block_size``, ``platforms/interface.py``
      0.20.0 / 0.25.1): the block starts at the backend's ``get_preferred_block_size(16)`` (unless ``--block-size``
      is given), align = max(smallest kernel block, that block);
    * ≥0.27 (0.27.0 / 0.29.0 / 0.34.0; absent in 0.26.0): the same with align ≥ 128 for MLA hybrids
      ("TRTLLM/FlashInfer MLA decode kernels require the physical number of kernel blocks to be aligned").

    Example, Kimi-Linear TP2 (KDA page 1,085,440 B, MLA 1,152 B/token) under 0.25.1: FLASH_ATTN_MLA / TRITON_MLA
    align 16 -> 16 × cdiv(1,085,440, 18,432) = 944; FLASHINFER_MLA 32 -> 960; FLASHMLA 64 -> 960; CUTLASS_MLA
    128 -> 1,024; 0.11.1 align 64 -> 960; 0.34.0 align 128 -> 1,024."""
    if not model.max_mamba_state_bytes or model.family not in (Family.MLA, Family.DSA):
        return HybridAlignment(block_size, 16)
    kvq = model.kv_dtype_bytes == 1
    if engine_version < MLA_BACKEND_RULE_FROM:
        cutlass = attention_backend is not None and _backend_name(attention_backend) == VllmBackend.CUTLASS_MLA
        align = 128 if cutlass else 64
        return HybridAlignment(
            block_size,
            align,
            backend=VllmBackend.CUTLASS_MLA if cutlass else None,
            note=f"MLA hybrid block aligned to {align} (vLLM <0.20: 128 with CUTLASS_MLA, else 64)",
        )
    backend, why = vllm_mla_backend(
        sm_major=sm_major,
        kv_quantized=kvq,
        qk_nope_head_dim=model.qk_nope_head_dim,
        block_size=block_size if block_size_given else None,
        requested=attention_backend,
    )
    start = block_size if block_size_given else backend.preferred_block_size(16)
    floor = engine_version >= MLA_128_FLOOR_FROM
    align = max(backend.min_kernel_block, start, 128 if floor else 0)
    note = f"MLA attention backend {backend.name} ({why}): hybrid block aligned to {align}" + (
        " (the ≥0.27 floor of 128 for MLA hybrids)" if floor and align == 128 else ""
    )
    return HybridAlignment(start, backend.min_kernel_block, mla=floor, backend=backend.name, note=note)


def _one_group(layers: list[LayerKV], block_size: int) -> list[Group] | None:
    """Every layer of one type (one window for sliding layers, no Mamba): one group, else None."""
    kinds = {_attn_kind(x.kind) for x in layers}
    windows = {x.window for x in layers}
    if len(kinds) != 1 or (kinds == {"swa"} and len(windows) != 1) or "mamba" in kinds:
        return None
    pages = {x.name: x.page_bytes(block_size) for x in layers}
    uniform = len(set(pages.values())) == 1
    return [
        Group(
            kinds.pop(),
            layers,
            block_size,
            next(iter(pages.values())) if uniform else 0,
            layers[0].window,
            {} if uniform else pages,
        )
    ]


_Key = tuple[str, int | None, int]


def _buckets(
    layers: list[LayerKV], block_size: int, max_page: int, warnings: list[str], release: Release
) -> tuple[dict[_Key, list[LayerKV]], dict[_Key, int]]:
    """Layers by identical spec, and each bucket's block size after page unification (``P % p == 0`` ->
    ``block_size × P / p``; otherwise the page is padded, logged: ≤0.33 only for a backend that indexes KV by
    the block stride, else vLLM raises NotImplementedError, ``unify_kv_cache_spec_page_size`` v0.25.1; 0.34 for
    any non-MLA attention page)."""
    buckets: dict[_Key, list[LayerKV]] = {}
    bs_of: dict[_Key, int] = {}
    for x in layers:
        key: _Key
        if x.kind == "mamba":
            key = ("mamba", None, x.state_bytes)
            bs_of[key] = block_size
        else:
            p = x.page_bytes(block_size)
            own = x.block_size or block_size  # a layer with a block of its own (Gemma-4's FA4 head-256 pages)
            bs = own * (max_page // p) if max_page % p == 0 else own
            if max_page % p:
                warnings.append(
                    f"{x.name}: page {p} B padded to {max_page} B"
                    + (
                        ""
                        if release.pad_any_page
                        else " (this release pads only when the attention backend "
                        "indexes KV by block stride; otherwise vLLM raises NotImplementedError)"
                    )
                )
            key = (_attn_kind(x.kind), x.window, x.token_bytes)
            bs_of[key] = bs
        buckets.setdefault(key, []).append(x)
    return buckets, bs_of


def group_layers(model: ModelKV, block_size: int, warnings: list[str], release: Release) -> list[Group]:
    """The KV groups of every family but DeepSeek-V4 (see the module docstring).  ``warnings`` gets vLLM's
    padding lines ("Add N padding layers, may waste at most X% KV cache memory")."""
    layers = list(model.layers)
    if not layers:
        return []
    one = _one_group(layers, block_size)
    if one is not None:
        return one
    # hybrid: unify page sizes, bucket by spec, equal-size groups dealt round-robin
    attn_pages = [x.page_bytes(block_size) for x in layers if x.kind != "mamba"]
    mamba_pages = [x.state_bytes for x in layers if x.kind == "mamba"]
    max_page = max(attn_pages + mamba_pages)
    buckets, bs_of = _buckets(layers, block_size, max_page, warnings, release)
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < release.group_size_ratio * min(sizes):
        group_size = max(sizes)
    groups: list[Group] = []
    for key, ls in buckets.items():
        pad = group_size - len(ls) % group_size
        if pad != group_size:
            warnings.append(f"Add {pad} padding layers, may waste at most {pad / len(ls) * 100:.2f}% KV cache memory")
        n = cdiv(len(ls), group_size)
        groups.extend(Group(key[0], ls[i::n], bs_of[key], max_page, key[1]) for i in range(n))
    return groups


def _dsv4_key(x: LayerKV) -> tuple[str, int | None]:
    """Bucket of a DeepSeek-V4 tensor: all compressed (block-256) tensors together, SWA by window, states by
    block size."""
    if x.kind == "dsv4_c":
        return ("c", None)
    return (x.kind, x.window if x.kind == "dsv4_swa" else x.block_size)


def group_dsv4(model: ModelKV, block_size: int, warnings: list[str], release: Release) -> list[Group]:
    """DeepSeek-V4 buckets (block-256 MLA-type, SWA, block-4 states, block-8 states) and the
    packed split (``_get_packed_kv_cache_groups``, v0.33.0); ≤0.32 (the 0.22.0 wheel per the reference):
    bytes per block = Σ distinct MLA-type pages × tuples, for every group."""
    buckets: dict[tuple[str, int | None], list[LayerKV]] = {}
    for x in model.layers:
        buckets.setdefault(_dsv4_key(x), []).append(x)

    def per_page(ls: list[LayerKV]) -> dict[int, list[LayerKV]]:
        d: dict[int, list[LayerKV]] = {}
        for x in ls:
            d.setdefault(x.page_bytes(0), []).append(x)
        return d

    info = []
    for key, ls in buckets.items():
        pp = per_page(ls)
        balanced = len({len(v) for v in pp.values()}) == 1
        info.append((key, ls, pp, balanced))
    floor_rep = max((max(len(v) for v in pp.values()) for _, _, pp, bal in info if bal and len(pp) > 1), default=0)
    reps = (
        approximate_gcd([max(len(v) for v in pp.values()) for _, _, pp, bal in info if bal], floor_rep)
        if floor_rep
        else None
    )
    caps = _state_caps(info, release) if reps is None else {}
    groups: list[Group] = []
    for key, ls, pp, bal in info:
        n = cdiv(max(len(v) for v in pp.values()), reps) if (bal and reps) else caps.get(key, 1)
        kind = "dsv4_c" if key[0] == "c" else key[0]
        bs = ls[0].block_size or 256
        window = ls[0].window if kind != "dsv4_c" else None
        repeats = list(zip(*pp.values(), strict=False))
        for i in range(n):
            part = [x for r in repeats[i::n] for x in r] if n > 1 else ls
            groups.append(Group(kind, part, bs, 0, window, {x.name: x.page_bytes(0) for x in part}))
    if release.dsv4_grouping is DsV4Grouping.TUPLES and reps:
        distinct = sorted(
            {
                x.page_bytes(0)
                for x in buckets.get(("c", None), []) + [y for k, v in buckets.items() if k[0] == "dsv4_swa" for y in v]
            }
        )
        bpb = sum(distinct) * reps
        for g in groups:
            g.bpb_override = bpb
    return groups


def _widest_group_bytes(pp: Mapping[int, list[LayerKV]], n: int) -> int:
    """Page bytes of the largest of the ``n`` groups a bucket splits into: ``Σ cdiv(layers of page p, n) × p``."""
    return sum(cdiv(len(v), n) * page for page, v in pp.items())


def _state_caps(
    info: list[tuple[tuple[str, int | None], list[LayerKV], dict[int, list[LayerKV]], bool]], release: Release
) -> dict[tuple[str, int | None], int]:
    """Groups per sliding-window bucket when no bucket mixes page sizes (no repeat pattern), ≥0.30.

    ``_get_packed_kv_cache_groups`` (``is_state_bucket``, v0.30.0 ``v1/core/kv_cache_utils.py``, the same in
    v0.33.0 / v0.34.0 ``v1/core/kv_cache_planning.py``; absent in v0.29.0, where only Mamba buckets are state
    buckets and DeepSeek-V4 has none)::

        anchor = max over buckets of widest group bytes, a state bucket split to one layer per group
        groups(state bucket) = max(1, cdiv(layers, max(anchor // page, 1)))

    DeepSeek-V4's SWA rings and compressor states are ``SlidingWindowMLASpec`` (a ``SlidingWindowSpec``).
    Example: four ratio-128 layers (SWA page 37,440 B, compressed 1,728, state 32,832): anchor =
    max(37,440; 4 × 1,728; 32,832) = 37,440, so the SWA and the state bucket each become 4 one-layer groups
    (0.29: one group each, 4 × 37,440 = 149,760 B per block)."""
    if not release.packed_sliding_states:
        return {}
    state = {key for key, _, _, _ in info if key[0] in ("dsv4_swa", "dsv4_state")}
    anchor = max(_widest_group_bytes(pp, len(ls) if key in state else 1) for key, ls, pp, _ in info)
    return {key: max(1, cdiv(len(ls), max(anchor // ls[0].page_bytes(0), 1))) for key, ls, _, _ in info if key in state}


Grouper = Callable[[ModelKV, int, list[str], Release], list[Group]]


def _lazy_grouper(path: str) -> Grouper:
    """The grouper a :class:`~kvplan.family.FamilySpec` names (``"module:function"``), resolved on first call."""

    def group(model: ModelKV, block_size: int, warnings: list[str], release: Release) -> list[Group]:
        grouper: Grouper = resolve(path)
        return grouper(model, block_size, warnings, release)

    return group


#: families with a grouping of their own (``FamilySpec.vllm_grouper``); every other family takes :func:`group_layers`
GROUPERS: Mapping[Family, Grouper] = {
    f: _lazy_grouper(s.vllm_grouper) for f, s in FAMILY_SPECS.items() if s.vllm_grouper is not None
}


def kv_groups(model: ModelKV, block_size: int, warnings: list[str], release: Release) -> list[Group]:
    """The model's KV groups, by its family's grouper."""
    return GROUPERS.get(model.family, group_layers)(model, block_size, warnings, release)


# --------------------------------------------------------------------------- blocks per request


def blocks_per_request(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    """Blocks one ``length``-token request takes from group g (``KVCacheSpec.max_memory_usage_bytes``
    / page, v0.33.0): full ``cdiv(L, bs)``; sliding ``cdiv(min(W−1+I, L), bs) + 1``; chunked
    ``cdiv(min(C+I, L), bs)``; Mamba ``2+spec`` (align) or ``1+spec``.

    Example: gpt-oss-120b sliding layers (W 128, block 16), I = 2048, L = 16,384: cdiv(2175, 16) + 1 = 137.
    The formula: :func:`kvplan.engines.vllm.vector.request_blocks` (the one ``kvplan fit`` and ``kvplan sweep`` use)."""
    from kvplan.engines.vllm.vector import request_blocks

    return int(
        request_blocks(
            kind=g.kind,
            block_size=g.block_size,
            window=g.window,
            length=length,
            in_flight=in_flight,
            mamba_blocks=mamba_blocks,
        )
    )

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

Example: Gemma-3-27B (10 full + 52 sliding layers, 16 KV heads × 256 B × 2, block 16): group size 10 ->
1 full + 6 sliding groups, bytes per block 10 × 16 × 16 × 256 × 2 = 1,310,720.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kvplan.engines.vllm.releases import DsV4Grouping, Release
from kvplan.engines.vllm.specs import LayerKV, ModelKV
from kvplan.family import Family


@dataclass
class Group:
    """One KV-cache group: its layers, block size and page (uniform) or per-layer pages (one-type groups)."""

    kind: str
    layers: list[LayerKV]
    block_size: int
    page: int                 # page bytes of one layer of the group (uniform page)
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
    """Grouping type: full and MLA (and indexer) are all full-attention-like."""
    return "full" if kind in ("full", "mla", "indexer") else kind


def hybrid_block_size(*, attn_token_bytes: int, mamba_state_bytes: int, block_size: int,
                      kernel_min_block: int = 16, mla: bool = False) -> int:
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


def _one_group(layers: list[LayerKV], block_size: int) -> list[Group] | None:
    """Every layer of one type (one window for sliding layers, no Mamba): one group, else None."""
    kinds = {_attn_kind(x.kind) for x in layers}
    windows = {x.window for x in layers}
    if len(kinds) != 1 or (kinds == {"swa"} and len(windows) != 1) or "mamba" in kinds:
        return None
    pages = {x.name: x.page_bytes(block_size) for x in layers}
    uniform = len(set(pages.values())) == 1
    return [Group(kinds.pop(), layers, block_size, next(iter(pages.values())) if uniform else 0,
                  layers[0].window, {} if uniform else pages)]


_Key = tuple[str, int | None, int]


def _buckets(layers: list[LayerKV], block_size: int, max_page: int, warnings: list[str],
             release: Release) -> tuple[dict[_Key, list[LayerKV]], dict[_Key, int]]:
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
            bs = block_size * (max_page // p) if max_page % p == 0 else block_size
            if max_page % p:
                warnings.append(f"{x.name}: page {p} B padded to {max_page} B" + (
                    "" if release.pad_any_page else " (this release pads only when the attention backend "
                    "indexes KV by block stride; otherwise vLLM raises NotImplementedError)"))
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
    reps = approximate_gcd([max(len(v) for v in pp.values()) for _, _, pp, bal in info if bal],
                           floor_rep) if floor_rep else None
    groups: list[Group] = []
    for key, ls, pp, bal in info:
        n = cdiv(max(len(v) for v in pp.values()), reps) if (bal and reps) else 1
        kind = "dsv4_c" if key[0] == "c" else key[0]
        bs = ls[0].block_size or 256
        window = ls[0].window if kind != "dsv4_c" else None
        repeats = list(zip(*pp.values(), strict=False))
        for i in range(n):
            part = [x for r in repeats[i::n] for x in r] if n > 1 else ls
            groups.append(Group(kind, part, bs, 0, window, {x.name: x.page_bytes(0) for x in part}))
    if release.dsv4_grouping is DsV4Grouping.TUPLES and reps:
        distinct = sorted({x.page_bytes(0) for x in buckets.get(("c", None), []) + [
            y for k, v in buckets.items() if k[0] == "dsv4_swa" for y in v]})
        bpb = sum(distinct) * reps
        for g in groups:
            g.bpb_override = bpb
    return groups


Grouper = Callable[[ModelKV, int, list[str], Release], list[Group]]

#: families with a grouping of their own; every other family takes :func:`group_layers`
GROUPERS: Mapping[Family, Grouper] = {Family.DSV4: group_dsv4}


def kv_groups(model: ModelKV, block_size: int, warnings: list[str], release: Release) -> list[Group]:
    """The model's KV groups, by its family's grouper."""
    return GROUPERS.get(model.family, group_layers)(model, block_size, warnings, release)


# --------------------------------------------------------------------------- blocks per request

def _full_blocks(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    return cdiv(length, g.block_size)


def _window(g: Group) -> int:
    if g.window is None:  # every sliding / state group is built with its window
        raise AssertionError(f"{g.kind} group without a window")
    return g.window


def _sliding_blocks(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    return cdiv(min(_window(g) - 1 + in_flight, length), g.block_size) + 1


def _chunked_blocks(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    return cdiv(min(_window(g) + in_flight, length), g.block_size)


def _mamba_blocks(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    return mamba_blocks


_BLOCKS_BY_KIND: dict[str, Callable[[Group, int, int, int], int]] = {
    "full": _full_blocks, "mla": _full_blocks, "indexer": _full_blocks, "dsv4_c": _full_blocks,
    "swa": _sliding_blocks, "dsv4_swa": _sliding_blocks, "dsv4_state": _sliding_blocks,
    "chunked": _chunked_blocks, "mamba": _mamba_blocks,
}


def blocks_per_request(g: Group, length: int, in_flight: int, mamba_blocks: int) -> int:
    """Blocks one ``length``-token request takes from group g (``KVCacheSpec.max_memory_usage_bytes``
    / page, v0.33.0): full ``cdiv(L, bs)``; sliding ``cdiv(min(W−1+I, L), bs) + 1``; chunked
    ``cdiv(min(C+I, L), bs)``; Mamba ``2+spec`` (align) or ``1+spec``.

    Example: gpt-oss-120b sliding layers (W 128, block 16), I = 2048, L = 16,384: cdiv(2175, 16) + 1 = 137."""
    return _BLOCKS_BY_KIND[g.kind](g, length, in_flight, mamba_blocks)

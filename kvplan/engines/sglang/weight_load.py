"""SGLang's weight load as kvplan estimates it: :class:`WeightLoad` (the loader's options beyond the sharding) and
:func:`weight_estimate` (the estimate of :mod:`kvplan.weights.estimate`, remembered on disk per model content and
sharding).  Split from :mod:`kvplan.engines.sglang.planner`, which calls it once per plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec


class WeightLoad:
    """How SGLang loads the weights, beyond their sharding (tp / pp / ep / attention DP): the flags and the GPU that
    change which tensors sit on the device.  ``engram_on_host`` / ``engram_placement``: V4.1's engram tables
    (``--engram-*``); ``moe_dense_tp_size`` / ``enable_dp_lm_head``: SGLang's dense-MLP and lm_head sharding flags;
    ``speculative_algorithm``: the resolved draft algorithm (None = no draft); ``gpu_vendor``: the GPU preset's
    vendor (ROCm loads some quantized MoE layouts differently).  A plain slotted record, as the planner's others
    (no dataclass on the start-up path); nothing assigns to it after construction.
    Example: ``WeightLoad(engram_on_host=True)``."""

    __slots__ = (
        "enable_dp_lm_head",
        "engram_on_host",
        "engram_placement",
        "gpu_vendor",
        "moe_dense_tp_size",
        "speculative_algorithm",
    )

    def __init__(
        self,
        *,
        engram_on_host: bool = False,
        engram_placement: str | None = None,
        moe_dense_tp_size: int | None = None,
        enable_dp_lm_head: bool = False,
        speculative_algorithm: str | None = None,
        gpu_vendor: str = "nvidia",
    ) -> None:
        self.engram_on_host, self.engram_placement = engram_on_host, engram_placement
        self.moe_dense_tp_size, self.enable_dp_lm_head = moe_dense_tp_size, enable_dp_lm_head
        self.speculative_algorithm, self.gpu_vendor = speculative_algorithm, gpu_vendor


_NO_LOAD_OPTIONS = WeightLoad()


def weight_estimate(
    model: ModelSpec, *, tp: int, pp: int, ep: int, attn_dp: int, load: WeightLoad = _NO_LOAD_OPTIONS
) -> dict[str, Any]:
    """kvplan.weights.estimate.estimate_weight_bytes for SGLang, remembered on disk (kvplan.cache) per model content
    and sharding: the estimate walks every tensor of the model, which is most of a warm ``fit``'s own work.

    ``speculative_algorithm`` (SGLang's resolved name, e.g. ``SpecPlan.algorithm``; None = no draft counted) adds the
    draft's weights, which SGLang loads before it profiles the KV budget (:mod:`kvplan.weights.draft`); it is part of
    the cache key only when given, so the keys of plans without a draft are the ones recorded before.  ``gpu_vendor``
    (the GPU preset's vendor) picks vendor-specific loading, e.g. the WNA16 MoE buffers SGLang keeps on ROCm
    (kvplan.weights.kernels.wna16_moe_index_bytes); it joins the key only when it is not nvidia."""
    engram_on_host, engram_placement = load.engram_on_host, load.engram_placement
    moe_dense_tp_size, enable_dp_lm_head = load.moe_dense_tp_size, load.enable_dp_lm_head
    speculative_algorithm, gpu_vendor = load.speculative_algorithm, load.gpu_vendor
    import json
    import zlib

    from kvplan import cache
    from kvplan.weights import ESTIMATE_REVISION

    # the estimate's own revision is part of the key: a changed estimator never reads an older answer
    key_parts: list[Any] = [
        ESTIMATE_REVISION,
        model.config,
        model.quantization,
        model.checkpoint_bytes,
        tp,
        pp,
        ep,
        attn_dp,
        engram_on_host,
        moe_dense_tp_size,
        enable_dp_lm_head,
    ]
    if engram_placement is not None:
        key_parts.append(engram_placement)
    if speculative_algorithm:
        key_parts.append({"speculative_algorithm": speculative_algorithm})
    if gpu_vendor != "nvidia":
        key_parts.append({"gpu_vendor": gpu_vendor})
    ident = json.dumps(key_parts, sort_keys=True, default=str)
    key = f"w{zlib.crc32(ident.encode()):08x}"
    hit = cache.load("weights", key, ident)
    if hit is not None:
        return dict(hit)
    from kvplan.weights.estimate import estimate_weight_bytes

    kw: dict[str, Any] = {"engram_placement": engram_placement} if engram_placement is not None else {}
    if speculative_algorithm:
        kw["speculative_algorithm"] = speculative_algorithm
    if gpu_vendor != "nvidia":
        kw["gpu_vendor"] = gpu_vendor
    est = estimate_weight_bytes(
        config=model.config,
        quantization=model.quantization,
        checkpoint_bytes=model.checkpoint_bytes,
        tp_size=tp,
        pp_size=pp,
        ep_size=ep,
        attn_dp_size=attn_dp,
        engine="sglang",
        engram_on_host=engram_on_host,
        moe_dense_tp_size=moe_dense_tp_size,
        enable_dp_lm_head=enable_dp_lm_head,
        **kw,
    )
    # SGLang measures the load as free memory before - after (after empty_cache): the caching allocator's segment
    # tails are taken too, and the KV pool is sized from that free memory (kvplan.weights.allocator)
    reserve = est.allocator_reserve_bytes
    out = {
        "per_gpu_bytes": est.measured_bytes,
        "method": est.method,
        "notes": list(est.notes)
        + (
            [f"+ {reserve / 2**20:,.0f} MiB caching-allocator reserve: SGLang's weight load is device-level"]
            if reserve
            else []
        ),
        "breakdown": [[name, nbytes] for name, nbytes in (*est.breakdown, ("allocator_reserve", reserve)) if nbytes],
    }
    cache.store("weights", key, ident, out)
    return out

"""The KV families kvplan plans: one type, used by every layer.

A family says how a model's layers store their KV cache, engine-neutrally: the geometry for each family lives in
``kvplan.geometry``, and each engine prices it with the pool planner its registry maps the family to
(``kvplan.engines.sglang.pools.POOL_PLANNERS``, the vLLM spec builder).  ``Family`` is a ``str`` enum, so a member
equals its value (``Family.GQA == "gqa"``) and serialises to it in JSON and CSV.
"""

from __future__ import annotations

from enum import StrEnum


class Family(StrEnum):
    GQA = "gqa"  # MHA / GQA / MQA: K and V per KV head on every layer
    MLA = "mla"  # multi-head latent attention: one compressed latent + RoPE key per token
    DSA = "dsa"  # MLA with DeepSeek sparse attention's indexer keys (V3.2, GLM-5)
    DSV4 = "dsv4"  # DeepSeek-V4 family: compressed + sliding-window pools
    HYBRID_SWA = "hybrid_swa"  # full-attention layers beside sliding-window layers
    HYBRID_MAMBA = "hybrid_mamba"  # attention layers beside Mamba / linear-attention (state) layers

    @property
    def is_hybrid(self) -> bool:
        """Layers of more than one kind (the pool holds more than one kind of page)."""
        return self in (Family.HYBRID_SWA, Family.HYBRID_MAMBA)

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Family.GQA: "grouped-query attention",
    Family.MLA: "multi-head latent attention",
    Family.DSA: "DeepSeek sparse attention",
    Family.DSV4: "DeepSeek-V4 compressed attention",
    Family.HYBRID_SWA: "sliding-window hybrid",
    Family.HYBRID_MAMBA: "linear-attention hybrid",
}

#: families whose attention layers are all of one kind (the KV-dtype and page rules take these)
ATTENTION_FAMILIES: tuple[Family, ...] = (Family.GQA, Family.MLA, Family.DSA, Family.DSV4)


def family_or_none(value: object) -> Family | None:
    """``Family(value)`` for a family name (or member), None for anything else.

    Example: ``family_or_none("dsa") is Family.DSA``; ``family_or_none("rwkv") is None``.
    """
    if isinstance(value, Family):
        return value
    if isinstance(value, str) and value in Family._value2member_map_:
        return Family(value)
    return None

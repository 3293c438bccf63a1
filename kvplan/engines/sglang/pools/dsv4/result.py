"""The DeepSeek-V4 pools of one rank (:class:`DSV4Pools`): what every release's configurator returns (0.5.21+
:func:`~kvplan.engines.sglang.pools.dsv4.sizing.dsv4_pool_sizes`, 0.5.12 - 0.5.20
:func:`~kvplan.engines.sglang.pools.dsv4_legacy.legacy_pool_sizes`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False, repr=False)
class DSV4Pools:
    """Result of :func:`dsv4_pool_sizes` for one attention-DP rank / PP stage (target worker)."""

    full_tokens: int
    swa_tokens: int
    c4_tokens: int
    c128_tokens: int
    bytes_per_full_token: float
    bytes_per_swa_token: float
    fixed_bytes: int
    swa_mode: str
    layout: str
    page_size: int
    max_running_requests: int
    components: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    # extras
    budget_mrr: int = 0  # the per-rank mrr the fixed states were sized with (before the tokens//2 cap)
    swa_cap_tokens: int | None = None
    swa_prefix_tails: int = 0
    swa_full_tokens_ratio: float | None = None  # ratio used in ratio mode
    c128_state_bytes: int = 0
    c2_state_bytes: int = 0
    swa_fixed_bytes: int = 0
    low_ratio_padding_bytes: float = 0.0
    budgeted_bytes: float = 0.0  # full * bytes_per_full + padding + fixed (<= budget on the profiling path)
    c4_state_pool_size: int = 0
    ring_sizes: tuple[tuple[int, int], ...] = ()
    owner_layers: tuple[tuple[int, tuple[int, ...]], ...] = field(default=())

    @property
    def allocated_bytes(self) -> int:
        """Sum of :attr:`components` (what the pools allocate, incl. padding pages / draft reserve)."""
        return sum(b for _, b in self.components)

"""The flags :func:`kvplan.engines.sglang.pools.mamba.mamba_carve` reads, as one frozen record (issue 21 item 4: a
pool formula takes a context object, not a keyword bag).

Example: ``CarveKnobs(radix_cache=False, max_running_requests=64, attn_dp_size=2)`` -- the state pool sized from
``--max-running-requests`` (64 // 2 = 32 slots per DP rank).
"""

from __future__ import annotations

from typing import NamedTuple

from kvplan.engines.backends import MambaSsmDtype


class CarveKnobs(NamedTuple):
    """The flags and layout :func:`mamba_carve` reads, as one frozen record (the engine's defaults when left out).

    ``radix_cache`` as server_args leaves it (:func:`release_radix_cache`); ``max_running_requests`` per engine;
    ``ssm_dtype`` ``--mamba-ssm-dtype`` (None: the config's); ``mamba_radix_cache_strategy`` resolved ("auto"
    from 0.5.14, else "no_buffer").
    """

    mamba_full_memory_ratio: float = 0.9
    max_mamba_cache_size: int | None = None
    radix_cache: bool = True
    max_running_requests: int | None = None
    attn_dp_size: int = 1
    speculative_num_draft_tokens: int = 0
    overlap_schedule: bool = True
    page_size: int = 1
    ssm_dtype: MambaSsmDtype | None = None
    pp_size: int = 1
    mamba_radix_cache_strategy: str = "auto"

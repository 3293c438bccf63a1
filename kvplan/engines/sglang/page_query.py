"""The one frozen record a page-size rule reads (issue 21 item 4: a rule takes a context object, not a keyword bag).

Every release's page rule (``RuleSet.default_page_size``: ``rules.default_page_size`` for the newest release,
``history.pages.page_size_by_era`` / ``page_size_before_0_5_3`` for the older ones) is called with one
:class:`PageQuery`, built once by the planner from the deployment, the model and the GPU; what a release did not read
it ignores.  (A ``NamedTuple``: immutable, typed, and cheaper to define at start-up than a dataclass.)

Example: ``PageQuery(family="gqa", attention_backend=None, sm_major=10, vendor="nvidia")`` is Llama on a B200 with
no ``--page-size``: ``rules_for("0.5.23").default_page_size(q)`` = 64 (trtllm_mha's constraint).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvplan.engines.backends import AttentionBackend


class PageQuery(NamedTuple):
    """What decides SGLang's page size: the model's attention family and traits, the GPU, and the user's flags.

    ``attention_backend`` None = the engine's default; ``requested`` = ``--page-size`` (None: not given);
    ``architectures`` the config's list (model overrides key on it); ``radix_cache`` / ``speculative`` /
    ``overlap_schedule`` the flags the Qwen3-Next SM100 override reads.
    """

    family: str
    attention_backend: AttentionBackend | None
    sm_major: int | None
    vendor: str = "nvidia"
    requested: int | None = None
    prefill_attention_backend: AttentionBackend | None = None
    decode_attention_backend: AttentionBackend | None = None
    kv_cache_dtype: str | None = None
    deepseek_family: bool = False
    has_asymmetric_kv: bool = False
    speculative_eagle_topk: int | None = None
    index_kpool: int = 1
    hip_dsa_preshuffle: bool = True
    hip_vectorized_5d: bool = False
    architectures: Any = None
    radix_cache: bool = True
    speculative: bool = False
    overlap_schedule: bool = True

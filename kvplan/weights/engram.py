"""Where SGLang keeps DeepSeek-V4.1's engram tables, by release and environment.

The two tables (fp8 rows + one e8m0 scale per 32 values, ~189 GiB for V4.1-Flash) are read by
``layers/engram.py EngramEmbedding.__init__`` (SGLang v0.5.23; V4.1 and the engram layer first appear in 0.5.21):

* default: device memory, rows split over the whole TP group (DP attention or not).  0.5.21 / 0.5.22 split the
  rows equally (``num_embeddings * rank // tp``); 0.5.23 aligns the split to the hash columns when their count
  divides by tp (``shard_range``).  kvplan prices ``ceil(rows / tp)``, the equal split's largest share; the
  column-aligned share differs from it by about a thousand rows (< 0.001 GiB), not modelled.
* ``SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1`` (0.5.21+): pinned host memory (mmap + ``cudaHostRegister``), none on
  the GPU.  ``SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT`` = ``shared`` (default: one memfd copy of the whole table for
  the TP group, ranks in one PID namespace) or ``per_rank`` (each rank maps its own rows); any other value makes
  the loader raise (``_HostTable``).
* ``SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS=1`` (0.5.23, CUDA, tp > 1): each rank's shard in exportable device memory
  mapped by its peers; it takes precedence over the host table (``_warn_host_table_ignored``).  GPU bytes as the
  default (plus VMM granularity rounding, not modelled).

The environment values are read as SGLang's ``EnvBool`` does (``environ.py``: true/1/yes/y, false/0/no/n, any
other value is an error).  SGLang has no command-line flag for any of this; "offload mode ram/nvme" of third-party
launchers (a custom row store) keeps no table on the GPU either, which is the host placement here.  Each engram
layer's ``wkv`` projection stays on every GPU in every placement (:func:`kvplan.weights.inventory._engram`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from kvplan.errors import InputError
from kvplan.weights.kernels import release_triple

__all__ = ["ENGRAM_SINCE", "PEER_SHARDS_SINCE", "EngramPlacement", "engram_placement", "placement_note"]

ENGRAM_SINCE = (0, 5, 21)  # layers/engram.py, SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE and its layout
PEER_SHARDS_SINCE = (0, 5, 23)  # SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS

HOST_TABLE = "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE"
HOST_LAYOUT = "SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT"
PEER_SHARDS = "SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS"

_TRUE = ("true", "1", "yes", "y")
_FALSE = ("false", "0", "no", "n")


class EngramPlacement(StrEnum):
    """Where the engram tables live."""

    GPU = "gpu"  # device memory, rows split over TP (the default)
    GPU_PEER = "gpu-peer"  # device memory, peer-mapped shards (same bytes per GPU)
    HOST_SHARED = "host-shared"  # one pinned host copy for the TP group
    HOST_PER_RANK = "host-per-rank"  # each rank's rows in its own pinned host mapping

    @property
    def on_gpu(self) -> bool:
        return self in (EngramPlacement.GPU, EngramPlacement.GPU_PEER)


def _env_bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name)
    if raw is None:
        return False
    v = str(raw).lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise InputError(
        f'{name}="{raw}" is not a valid boolean value (SGLang reads true/1/yes/y or false/0/no/n)', field=name
    )


def engram_placement(
    *, release: str | None = None, env: Mapping[str, str] | None = None, tp: int = 1, cuda: bool = True
) -> EngramPlacement:
    """The placement SGLang ``release`` (None = 0.5.23, the newest modelled) gives the tables under ``env``.

    Rule: before 0.5.21 InputError (no DeepSeek-V4.1 support); ``SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS`` true with
    tp > 1 on CUDA in 0.5.23+ -> gpu-peer; else ``SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE`` true -> host-shared or
    host-per-rank by ``SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT`` (default shared; another value: InputError, the
    loader's ValueError); else gpu.

    Examples: ``{}`` -> gpu; ``{"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1"}`` -> host-shared; the same with layout
    ``per_rank`` -> host-per-rank; with ``SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS=1`` too at tp 8 -> gpu-peer (0.5.22:
    host-shared, the variable does not exist there).
    """
    rel = release_triple(release)
    if rel < ENGRAM_SINCE:
        raise InputError(
            f"SGLang {release} has no DeepSeek-V4.1 engram support (layers/engram.py is new in 0.5.21)",
            field="--engine-version",
            hint="use SGLang 0.5.21 or later",
        )
    e = env or {}
    if rel >= PEER_SHARDS_SINCE and _env_bool(e, PEER_SHARDS) and tp > 1 and cuda:
        return EngramPlacement.GPU_PEER
    if not _env_bool(e, HOST_TABLE):
        return EngramPlacement.GPU
    layout = str(e.get(HOST_LAYOUT, "shared"))
    if layout == "shared":
        return EngramPlacement.HOST_SHARED
    if layout == "per_rank":
        return EngramPlacement.HOST_PER_RANK
    raise InputError(f'{HOST_LAYOUT}="{layout}": SGLang accepts shared or per_rank', field=HOST_LAYOUT)


_WHY = {
    EngramPlacement.GPU: "on GPU, rows split over TP (layers/engram.py EngramEmbedding)",
    EngramPlacement.GPU_PEER: f"on GPU, rows split over TP in peer-mapped shards ({PEER_SHARDS}=1)",
    EngramPlacement.HOST_SHARED: f"in host memory ({HOST_TABLE}=1)",
    EngramPlacement.HOST_PER_RANK: f"in host memory, each rank's rows in its own mapping ({HOST_TABLE}=1, "
    f"{HOST_LAYOUT}=per_rank)",
}


def placement_note(placement: EngramPlacement) -> str:
    """The sentence the estimate's notes carry for ``placement``."""
    return "engram tables " + _WHY[placement]

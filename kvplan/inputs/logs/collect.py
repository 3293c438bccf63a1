"""What the line readers collect while the log is scanned: figures per rank, engine mentions, parsed args.

A figure is kept per rank (the first print of each rank, so a later draft-model load does not replace the
target's); :meth:`PerRank.pick` then takes the minimum over ranks (SGLang sizes its pool from the minimum over
the TP group) or, for usage figures (weight load, CUDA graph), the maximum, and warns when the ranks disagree.
"""

from __future__ import annotations

import re
from typing import Any

from kvplan.inputs.logs.text import GIB, gib_to_bytes


class PerRank:
    """First value printed by each rank; min or max across ranks."""

    def __init__(self) -> None:
        self.by_rank: dict[str, Any] = {}
        self.at_rank: dict[str, int] = {}  # rank -> offset of the line that printed its value (-1: unknown)
        self.repeats = 0

    def add(self, rank: str, value: Any, at: int = -1) -> None:
        if rank in self.by_rank:
            self.repeats += 1
            return
        self.by_rank[rank] = value
        self.at_rank[rank] = at

    def pick(self, name: str, warnings: list[str], *, use_max: bool = False, unit: str = "") -> Any:
        """min (or max) over ranks; ranks that disagree add a warning naming the range.

        Example: TP0 70.00 GiB, TP1 69.50 GiB -> 69.50 GiB and "ranks disagree on free_after_weights
        (69.50..70.00 GiB over 2 ranks): min taken".
        """
        if not self.by_rank:
            return None
        vals = list(self.by_rank.values())
        if len(set(vals)) > 1:
            lo, hi = min(vals), max(vals)
            rng = f"{lo / GIB:.2f}..{hi / GIB:.2f} GiB" if unit == "GiB" else f"{lo}..{hi}"
            warnings.append(
                f"ranks disagree on {name} ({rng} over {len(vals)} ranks): {'max' if use_max else 'min'} taken"
            )
        return max(vals) if use_max else min(vals)


class Collector:
    """Everything the line readers found; :func:`kvplan.inputs.logs.facts.parse_log` turns it into LogFacts."""

    def __init__(self, text: str = "") -> None:
        self.text = text  # the normalised log text the offsets below point into
        self.at = -1  # offset of the line being read (set by the scan)
        self.warnings: list[str] = []
        self.per: dict[str, PerRank] = {}
        self.extra: dict[str, Any] = {}
        self.sg_hits = 0
        self.vl_hits = 0
        self.sg_mentions = 0
        self.vl_mentions = 0
        self.server_args: dict[str, Any] = {}
        self.vllm_config: dict[str, Any] = {}
        self.non_default: dict[str, Any] = {}
        self.dsv4: dict[str, Any] = {}
        self.sg_version: str | None = None
        self.vl_version: str | None = None
        self.version_text: dict[str, str] = {}  # engine -> the text that printed its version
        self.formats: set[str] = set()  # ids of the release-specific line forms seen (kvplan.inputs.logs.formats)
        self.gpu_name: str | None = None
        self.gpu_total: int | None = None
        self.cli: dict[str, Any] = {}
        self.cli_model: str | None = None
        self.truncated = 0

    def add(self, key: str, rank: str, value: Any) -> None:
        self.per.setdefault(key, PerRank()).add(rank, value, self.at)

    def gib(self, key: str, rank: str, m: re.Match[str] | None, unit_group: int | None = 2) -> None:
        """Add a GiB figure; a number without its unit at the very end of the window is a truncated line."""
        if m is None:
            return
        if unit_group is not None and not m.group(unit_group) and m.end() >= len(m.string):
            self.truncated += 1
            return
        self.add(key, rank, gib_to_bytes(float(m.group(1))))

    def has(self, key: str) -> bool:
        """True when some rank printed ``key``."""
        return key in self.per and bool(self.per[key].by_rank)

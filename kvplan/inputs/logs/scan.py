"""The scan: every candidate line (a line holding a marker) goes through the readers, in this order.

1. a fixture header comment (``# source: ...``) is skipped;
2. the long argument lines (SGLang ``server_args=``, vLLM ``with config:``, ``non-default args:``) are read
   from the raw text and end the line's reading (a wrapped ``server_args`` repr also skips its continuation);
3. the SGLang line table (first match); when it was not an SGLang sizing line, the vLLM line table (every match);
4. the engine-neutral facts: engine versions and mentions, the GPU, the launch command;
5. the release-specific forms of the line (:mod:`~kvplan.inputs.logs.formats`).
"""

from __future__ import annotations

from collections.abc import Callable

from kvplan.inputs.logs import common, formats, sglang, vllm
from kvplan.inputs.logs.collect import Collector
from kvplan.inputs.logs.text import HEADER_RE, MAX_LINE, Candidate, candidate_lines, clean_line

# Readers of the long argument lines: None = not this kind, else the offset the scan resumes at (-1: next line).
_ARGS_READERS: tuple[Callable[[Collector, Candidate], int | None], ...] = (
    sglang.read_server_args,
    vllm.read_engine_config,
    vllm.read_non_default_args,
)


def _line_text(c: Collector, cand: Candidate) -> str:
    """The cleaned line from 300 characters before its first marker, at most MAX_LINE characters."""
    seg_start = max(cand.start, cand.first - 300)
    if cand.end - cand.start > MAX_LINE:
        c.extra["long_lines_cut"] = c.extra.get("long_lines_cut", 0) + 1
    return clean_line(cand.text[seg_start : min(cand.end, seg_start + MAX_LINE)])


def _read_line(c: Collector, cand: Candidate) -> None:
    line = _line_text(c, cand)
    if not sglang.read_line(c, line):
        vllm.read_line(c, line)
    sglang.read_version(c, line)
    vllm.read_version(c, line)
    common.read_gpu(c, line)
    common.read_cli(c, line, cand)
    formats.read_line(c, line)


def scan(text: str) -> Collector:
    """Read every candidate line of a normalised log text into a :class:`Collector`."""
    c = Collector(text)
    cands, capped = candidate_lines(text)
    if capped:
        c.warnings.append("very many marker lines: only the first ones of each kind were read")
    skip_until = -1
    for cand in cands:
        if cand.start < skip_until or HEADER_RE.match(text[cand.start : min(cand.end, cand.start + 200)]):
            continue
        c.at = cand.start
        for reader in _ARGS_READERS:
            resume = reader(c, cand)
            if resume is not None:
                skip_until = max(skip_until, resume)
                break
        else:
            _read_line(c, cand)
    return c

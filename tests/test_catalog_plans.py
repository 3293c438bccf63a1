"""Issue 25 (Done means): every model preset plans under each engine that serves it, at a small context on a GPU
count that holds its weights: one in-process plan per preset file per engine, so the work is bounded by the catalog
(about 170 files x 2 engines), not by any context or sweep.

Placement: the smallest power-of-two TP (1..8) whose share of the estimated weights is below 70 % of an H200
(141 GB), as in tests/test_catalog_models.py; a model too big for 8 H200s goes on B200s at TP 8 with the smallest
pipeline depth (1, 2, 4) whose share is below 70 % of a B200 (180 GB).  Context: 4,096 tokens, or the config's
``max_position_embeddings`` when that is smaller.  At that context every preset must *start* under both engines (the
KV pool holds one full request); the only exceptions are the engine refusals listed in
tests/test_catalog_models.py's REFUSALS (an InputError naming the model or a flag) and the models whose weights do
not fit even 32 x B200 (TOO_BIG, checked to be that: weights per GPU above the GPU's memory).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit
from tests.test_catalog_models import REFUSALS, weight_total

SMALL_CONTEXT = 4_096
H200_BYTES, B200_BYTES, SHARE = 141_000_000_000, 180_000_000_000, 0.70
ENGINES = ("sglang", "vllm")

#: presets whose weights exceed 32 x B200 at their own weight format: planned, and the answer is "does not start"
TOO_BIG: set[str] = set()


@functools.cache
def _placement(model_id: str) -> tuple[str, int, int]:
    """(gpu, tp, pp) for ``model_id`` from its estimated weight bytes (the rule in the module docstring)."""
    total = weight_total(model_id)
    if total is None:
        return "b200", 8, 1  # the estimate refuses this config: the largest single-stage placement
    for tp in (1, 2, 4, 8):
        if total / tp < SHARE * H200_BYTES:
            return "h200-sxm", tp, 1
    for pp in (1, 2, 4):
        if total / (8 * pp) < SHARE * B200_BYTES:
            return "b200", 8, pp
    return "b200", 8, 4


_FILES = sorted((p.configs_dir() / "models").glob("*.toml"))


def _context(m: p.ModelPreset) -> int:
    cfg = m.config
    pos = cfg.get("max_position_embeddings") or (cfg.get("text_config") or {}).get("max_position_embeddings")
    return min(SMALL_CONTEXT, pos) if isinstance(pos, int) and pos > 0 else SMALL_CONTEXT


_CASES = [(f, e) for f in _FILES for e in ENGINES]


@pytest.mark.parametrize(("path", "engine"), _CASES, ids=[f"{f.stem}-{e}" for f, e in _CASES])
def test_every_preset_starts_at_a_small_context(path: Path, engine: str):
    m = p.load_model_file(path)
    gpu, tp, pp = _placement(m.id)
    context = _context(m)
    where = f"{gpu} TP{tp} PP{pp}, {context} tokens"
    try:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, pp=pp, engine=engine, context_length=context))
    except InputError as exc:
        want = REFUSALS.get((m.id, engine))
        assert want is not None, f"{m.id} ({engine}, {where}) refused, not listed: {exc}"
        assert want in str(exc) and exc.field, f"{m.id} ({engine}): refused with another reason: {exc}"
        return
    assert res.context_length == context, (m.id, engine, res.context_length)
    assert res.kv_bytes_per_token > 0, (m.id, engine)
    if m.id in TOO_BIG:
        assert not res.starts and res.weight_bytes > res.device_bytes, (m.id, engine, res.weight_bytes)
        return
    assert res.starts, f"{m.id} ({engine}, {where}) does not start: {res.reasons}"
    assert res.kv_pool_tokens >= context, (m.id, engine, res.kv_pool_tokens)

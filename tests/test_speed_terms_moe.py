"""The routed-expert terms of kvplan.perf.moe, numbers derived by hand (the module docstring's formulas), and their
place in a step's breakdown."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvplan.perf.moe import moe_block_m, padded_rows_factor, topk_copy_bytes


def test_block_m_follows_the_default_config():
    # SGLang / vLLM get_default_config: 16 rows when M <= E, else 64
    assert moe_block_m(tokens=2048, experts=256) == 64
    assert moe_block_m(tokens=32, experts=256) == 16
    assert moe_block_m(tokens=256, experts=256) == 16
    assert list(moe_block_m(tokens=np.array([8.0, 8192.0]), experts=384)) == [16, 64]


def _exact(b: int, k: int, e: int, bm: int) -> float:
    """E x BM x E[ceil(n / BM)] / (B k) for n ~ Binomial(B, k / E), summed term by term (the reference)."""
    p, s = k / e, 0.0
    for n in range(b + 1):
        lp = (
            math.lgamma(b + 1)
            - math.lgamma(n + 1)
            - math.lgamma(b - n + 1)
            + n * math.log(p)
            + (b - n) * math.log1p(-p)
        )
        s += math.exp(lp) * math.ceil(n / bm)
    return e * bm * s / (b * k)


def test_padding_of_a_full_chunk():
    # 8,192 tokens x top-8 over 256 experts: lam = 256, sigma = sqrt(256 x 248 / 256) = 15.75; P(n > 64 j) = 1 for
    # j = 0..3, Q(0.5 / 15.75) = 0.487 for j = 4, ~0 beyond: 4.487 blocks x 64 = 287.2 rows for 256 pairs
    f = padded_rows_factor(tokens=8192, topk=8, experts=256, block_m=64)
    assert f == pytest.approx(4.487 * 64 / 256, rel=1e-3)
    assert f == pytest.approx(_exact(8192, 8, 256, 64), rel=5e-3)


def test_padding_of_the_seed_chunk():
    # DeepSeek-V4.1-Flash, 2,048 tokens, top-6 of 256: lam = 48, sigma = 6.85, P(n > 64) = Q(16.5 / 6.85) = 0.008:
    # 1.008 blocks = 64.5 rows for 48 pairs
    f = padded_rows_factor(tokens=2048, topk=6, experts=256, block_m=64)
    assert f == pytest.approx(1.008 * 64 / 48, rel=2e-3)
    assert f == pytest.approx(_exact(2048, 6, 256, 64), rel=5e-3)


def test_padding_doubles_32_tokens_per_expert():
    # 1,024 tokens: lam = 32, every expert touched (1 - (248/256)^1024 = 1 to 1e-12), P(n > 64) = Q(5.8) ~ 0:
    # one block of 64 rows for 32 pairs
    f = padded_rows_factor(tokens=1024, topk=8, experts=256, block_m=64)
    assert f == pytest.approx(2.0, rel=1e-6)


def test_padding_of_one_decode_token():
    # one token, top-8 of 384: T = 384 x (1 - 376/384) = 8 experts, each one block of 16 rows: 128 / 8 = 16
    assert padded_rows_factor(tokens=1, topk=8, experts=384, block_m=16) == pytest.approx(16.0)


def test_padding_of_an_array():
    got = padded_rows_factor(tokens=np.array([1.0, 1024.0]), topk=8, experts=256, block_m=np.array([16, 64]))
    assert list(got) == pytest.approx([16.0, 2.0])


def test_no_experts_no_padding():
    assert padded_rows_factor(tokens=100, topk=0, experts=0, block_m=64) == 1.0


def test_topk_copies():
    # Kimi-K2.5, TP8: 3 x 8 x 7,168 x 2 B x 60 layers x 8,192 tokens = 169,114,337,280 B; EP8 an eighth of it
    assert topk_copy_bytes(tokens=8192, topk=8, hidden=7168, moe_layers=60, ep=1) == 169_114_337_280
    assert topk_copy_bytes(tokens=8192, topk=8, hidden=7168, moe_layers=60, ep=8) == 169_114_337_280 / 8


def test_the_terms_are_named_in_the_breakdown():
    from kvplan.deployment import Deployment
    from kvplan.planning.speed import speed

    r = speed(Deployment(input_len=8192, output_len=1, chunked_prefill_size=2048))
    parts = r.prefill_chunk.parts
    pad = next(p for p in parts if p["name"].startswith("routed experts: rows padded"))
    copies = next(p for p in parts if p["name"].startswith("routed experts: top-k"))
    assert "routed experts" in [p["name"] for p in parts]
    assert pad["seconds"] > 0 and pad["bound"] == "compute"  # V4.1 at chunk 2,048: 48 tokens per expert, block 64
    assert copies["bytes"] > 0 and copies["bound"] == "memory"


def test_a_dense_model_has_neither():
    from kvplan.deployment import Deployment
    from kvplan.planning.speed import speed

    r = speed(Deployment(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm", num_gpus=1, tp=1, input_len=1024))
    assert not [p for p in r.prefill_chunk.parts if p["name"].startswith("routed experts")]

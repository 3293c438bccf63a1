"""SGLang's pool formulas take the resolved KV dtype as a ``DType`` member (issue 21 item 4, typed rule contracts).

The planner resolves ``--kv-cache-dtype`` once (SGLang's vocabulary and its ``auto`` rule, kvplan.engines.sglang
.kvdtype) and hands the pools the member in ``PoolContext.kv_dtype``; no pool function reads a spelling.  Checked
here: the annotations of every pool function (a regression to ``str`` fails), the context the planner builds for
each family, hand-derived cells from members, and that SGLang's words are still refused where the flag is read.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType

_KV_PARAMS = ("kv_dtype", "kv_cache_dtype")


def _pool_modules() -> list[str]:
    import kvplan.engines.sglang.pools as pools

    found = pkgutil.walk_packages(pools.__path__, prefix="kvplan.engines.sglang.pools.")
    return ["kvplan.engines.sglang.pools", *(info.name for info in found)]


def _text(annotation: object) -> str:
    """An annotation as written (``from __future__ import annotations``; a NamedTuple keeps a ``ForwardRef``)."""
    return str(getattr(annotation, "__forward_arg__", annotation))


def test_no_pool_function_takes_a_dtype_spelling():
    """Every function (and method) under kvplan/engines/sglang/pools/ with a KV dtype parameter declares the member:
    ``DType`` (resolved) or ``DType | None`` (``auto``: the DSA and DeepSeek-V4 selections resolve it themselves)."""
    seen = 0
    bad = []
    for name in _pool_modules():
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            funcs = [obj] if inspect.isfunction(obj) else []
            if inspect.isclass(obj):
                funcs = [f for f in vars(obj).values() if inspect.isfunction(f)]
                fields = getattr(obj, "__annotations__", {})
                for p in _KV_PARAMS:
                    if p in fields and obj.__module__ == name:
                        seen += 1
                        if _text(fields[p]) not in ("DType", "DType | None"):
                            bad.append(f"{name}.{obj.__qualname__}.{p}: {fields[p]}")
            for f in funcs:
                if f.__module__ != name:
                    continue
                for p in _KV_PARAMS:
                    ann = f.__annotations__.get(p)
                    if ann is None:
                        continue
                    seen += 1
                    if _text(ann) not in ("DType", "DType | None"):
                        bad.append(f"{name}.{f.__qualname__}({p}: {ann})")
    assert seen >= 12, seen  # the test sees the pool functions (gqa, mla, swa, mamba, dsa, dsv4 ...)
    assert not bad, bad


@pytest.mark.parametrize(
    ("model", "gpu", "kv", "want"),
    [
        (None, None, None, DType.FP8_E4M3),  # the default deployment (DeepSeek-V4.1-Flash, fp8 KV)
        ("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", None, DType.BF16),  # auto -> the model dtype
        ("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", "bfloat16", DType.BF16),  # SGLang's word -> the member
        ("deepseek-ai/DeepSeek-V3", "h200-sxm", "fp8_e4m3", DType.FP8_E4M3),
        ("openai/gpt-oss-120b", "h100-sxm", "mxfp8", DType.MXFP8),
    ],
)
def test_the_planner_hands_the_pools_the_member(model, gpu, kv, want):
    from kvplan.engines.sglang.pools import capturing_contexts
    from kvplan.planning.plan import fit

    fields = {k: v for k, v in (("model", model), ("gpu", gpu), ("kv_cache_dtype", kv)) if v is not None}
    with capturing_contexts() as contexts:
        res = fit(Deployment(**fields))
    assert contexts, "no pool planner ran"
    assert {type(c.kv_dtype) for c in contexts} == {DType}
    assert {c.kv_dtype for c in contexts} == {want}
    assert res.kv_cache_dtype == want.canonical  # the result keeps kvplan's spelling


def test_cells_from_members_hand_derived():
    from kvplan.engines.sglang.pools.dsv4.layout import dsv4_select_layout
    from kvplan.engines.sglang.pools.gqa import gqa_bytes_per_token
    from kvplan.engines.sglang.pools.mla import mla_bytes_per_token
    from kvplan.engines.sglang.pools.swa import swa_bytes_per_layer_token

    v3 = dict(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=61)
    assert mla_bytes_per_token(kv_dtype=DType.FP8_E4M3, **v3) == 576 * 61 == 35_136
    assert mla_bytes_per_token(kv_dtype=DType.BF16, **v3) == 576 * 2 * 61 == 70_272
    # nvfp4: 35,136 values // 2 + (576 // 16) scale bytes x 61 layers = 17,568 + 2,196
    assert mla_bytes_per_token(kv_dtype=DType.NVFP4, **v3) == 17_568 + 36 * 61 == 19_764
    llama = dict(num_kv_heads=8, head_dim=128, v_head_dim=128, num_layers=32, attn_tp_size=1)
    assert gqa_bytes_per_token(kv_dtype=DType.BF16, **llama) == 8 * 256 * 32 * 2 == 131_072
    # mxfp8: 65,536 one-byte values plus one scale byte per 32 of them
    assert gqa_bytes_per_token(kv_dtype=DType.MXFP8, **llama) == 65_536 + 65_536 // 32 == 67_584
    swa = dict(kv_heads=8, head_dim=64, v_head_dim=64, attn_tp_size=1)
    assert swa_bytes_per_layer_token(kv_dtype=DType.MXFP8, **swa) == 8 * 128 + 8 * 128 // 32 == 1_056
    assert swa_bytes_per_layer_token(kv_dtype=DType.NVFP4, **swa) == 8 * 128 == 1_024  # no FP4 method: 1 B a value
    v41 = dict(sm_major=10, is_v41=True, attn_tp_size=1)
    assert dsv4_select_layout(kv_dtype=None, **v41) == dsv4_select_layout(kv_dtype=DType.FP8_E4M3, **v41) == "v41"
    with pytest.raises(InputError, match="stores its KV pool as fp8"):
        dsv4_select_layout(kv_dtype=DType.BF16, **v41)
    with pytest.raises(InputError, match="'fp8_e5m2' is not supported"):
        dsv4_select_layout(kv_dtype=DType.FP8_E5M2, **v41)


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("fp8_e4m3fn", "unknown KV-cache dtype 'fp8_e4m3fn'"),  # an e4m3 spelling, not one of SGLang's words
        ("torch.bfloat16", "unknown KV-cache dtype 'torch.bfloat16'"),
        ("fp8", "unknown KV-cache dtype 'fp8'"),  # vLLM's word, not SGLang's
        ("bfloat16", "stores its KV pool as fp8"),  # SGLang's bf16 word: DeepSeek-V4's own reason
    ],
)
def test_sglang_words_are_still_checked_where_the_flag_is_read(word, message):
    """The pools compare members, so the words SGLang accepts are checked once, before them: the default
    deployment (DeepSeek-V4.1-Flash) with each word."""
    from kvplan.planning.plan import fit

    with pytest.raises(InputError, match=message):
        fit(Deployment(kv_cache_dtype=word))

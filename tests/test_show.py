"""``kvplan show``: the per-layer-type breakdown, vLLM's groups, and what ``-g`` changes (hand-derived)."""

from __future__ import annotations

from kvplan.planning.show import show_rows
from kvplan.views.listing import info_text


def _types(info):
    return {r["layer_type"]: r for r in info["layer_types"]}


def test_gemma4_layer_types_and_vllm_groups():
    # full 2 x (512 + 512) x 2 = 4,096 B/token/layer; sliding 8 x (256 + 256) x 2 = 8,192, in both engines
    info, rows = show_rows("gemma-4-26b-a4b", "h100-sxm")
    t = _types(info)
    assert (t["full attention"]["layers"], t["full attention"]["vllm_bytes_per_token_layer"]) == (5, 4096)
    assert t["full attention"]["sglang_bytes_per_token_layer"] == 4096
    assert (t["sliding window"]["layers"], t["sliding window"]["vllm_bytes_per_token_layer"]) == (25, 8192)
    # vLLM: page unification doubles the full block 16 -> 32 (4,096 x 32 = 8,192 x 16 = 131,072 B); six groups of
    # five layers -> 5 x 131,072 = 655,360 B per block, no padding layers
    g = info["vllm_groups"]
    assert len(g) == 6 and all(x["layers"] == 5 and x["bytes_per_block"] == 655_360 for x in g)
    assert {x["block_size"] for x in g if x["kind"] == "full attention"} == {32}
    assert info["vllm_padding"] == "no padding layers"
    assert rows  # the SGLang per-TP rows stay


def test_gpu_changes_show():
    # Gemma-4 under SGLang: trtllm_mha on SM100 snaps the page to 64; triton on SM90 keeps page 1
    h100, _ = show_rows("gemma-4-26b-a4b", "h100-sxm")
    b200, _ = show_rows("gemma-4-26b-a4b", "b200")
    assert (h100["sglang_page_size"], b200["sglang_page_size"]) == (1, 64)
    assert h100["gpu"] != b200["gpu"]
    # DeepSeek-V3.2 (DSA) under SGLang: auto KV is fp8 on SM100, bf16 on SM90
    h, _ = show_rows("deepseek-ai/DeepSeek-V3.2", "h100-sxm")
    b, _ = show_rows("deepseek-ai/DeepSeek-V3.2", "b200")
    assert (h["sglang_kv_cache_dtype"], b["sglang_kv_cache_dtype"]) == ("bf16", "fp8_e4m3")
    assert info_text(h) != info_text(b)


def test_kv_shared_layers_listed():
    info, _ = show_rows("gpt-oss-120b", None)
    assert not any("KV-sharing" in r["layer_type"] for r in info["layer_types"])
    t = _types(info)
    # 18 full + 18 sliding, 8 x (64 + 64) x 2 = 2,048 B each
    assert t["full attention"]["sglang_bytes_per_token_layer"] == 2048
    assert t["sliding window"]["layers"] == 18


def test_info_text_lists_rows():
    text = info_text({"a": 1, "layer_types": [{"layer_type": "full attention", "layers": 5}]})
    assert text == "a: 1\nlayer_types:\n  layer_type=full attention, layers=5\n"


def test_mla_hybrid_block_follows_the_gpu_backend():
    """Kimi-K3 (KDA + MLA) under the newest vLLM: the attention block is aligned by the MLA backend vLLM picks on the
    GPU (FLASH_ATTN_MLA on SM90, FLASHINFER_MLA on SM100; grouping.hybrid_alignment), with the >=0.27 floor of 128:
    5,696 (16-aligned, as before) -> 128 x 45 = 5,760, the block ``kvplan fit`` plans (its ``page_size``)."""
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    for gpu, backend in (("h100-sxm", "FLASH_ATTN_MLA"), ("b200", "FLASHINFER_MLA")):
        info, _ = show_rows("moonshotai/Kimi-K3", gpu)
        assert info["vllm_block_size"] == 5760 == 128 * 45
        assert f"MLA attention backend {backend}" in info["vllm_hybrid_alignment"]
        f = fit(Deployment(model="moonshotai/Kimi-K3", gpu=gpu, engine="vllm", tp=1, kv_cache_memory_bytes=40 * 2**30))
        assert f.page_size == info["vllm_block_size"]

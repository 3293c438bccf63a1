"""``kvplan show MODEL``: geometry and KV bytes per token per GPU by dtype and TP (SGLang 0.5.23 rules)."""

from __future__ import annotations

from typing import Any

from kvplan.errors import InputError

_TPS = (1, 2, 4, 8, 16)


def show_rows(model_text: str, gpu_text: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from kvplan.layouts import kvdtype
    from kvplan.model import resolve_gpu, resolve_model

    m = resolve_model(model_text)
    gpu = resolve_gpu(gpu_text) if gpu_text else None
    sm = gpu.sm_major if gpu else None
    vendor = gpu.vendor if gpu else "nvidia"
    c = m.config
    info: dict[str, Any] = {
        "model": m.id, "family": m.family, "architecture": m.architecture, "layers": m.num_layers,
        "context_length": m.context_length, "weights": m.quantization, "source": m.source,
    }
    if m.notes:
        info["notes"] = " ".join(m.notes)
    rows: list[dict[str, Any]] = []
    if m.family == "gqa":
        from kvplan.layouts.gqa import gqa_bytes_per_token, gqa_kv_heads_per_rank

        info.update(kv_heads=m.num_kv_heads, head_dim=m.head_dim, v_head_dim=m.v_head_dim)
        for dt in ("bf16", "fp8_e4m3"):
            for tp in _TPS:
                try:
                    heads = gqa_kv_heads_per_rank(num_kv_heads=m.num_kv_heads, attn_tp_size=tp)
                    b = gqa_bytes_per_token(num_kv_heads=m.num_kv_heads, head_dim=m.head_dim,
                                            v_head_dim=m.v_head_dim, num_layers=m.num_layers, attn_tp_size=tp,
                                            kv_dtype=dt)
                except InputError:
                    continue
                rows.append({"kv_cache_dtype": dt, "tp": tp, "kv_heads_per_gpu": heads, "bytes_per_token": b,
                             "note": "replicated (tp > kv heads)" if tp > m.num_kv_heads else "split by tp"})
    elif m.family == "mla":
        from kvplan.layouts.mla import mla_bytes_per_token

        info.update(kv_lora_rank=c.get("kv_lora_rank"), qk_rope_head_dim=c.get("qk_rope_head_dim"))
        for dt in ("bf16", "fp8_e4m3"):
            b = mla_bytes_per_token(kv_lora_rank=c["kv_lora_rank"], qk_rope_head_dim=c["qk_rope_head_dim"],
                                    num_layers=m.num_layers, kv_dtype=dt)
            rows.append({"kv_cache_dtype": dt, "tp": "any", "bytes_per_token": b,
                         "note": "latent replicated on every TP rank"})
    elif m.family == "dsa":
        from kvplan.layouts.dsa import dsa_bytes_per_token

        info.update(kv_lora_rank=c.get("kv_lora_rank"), qk_rope_head_dim=c.get("qk_rope_head_dim"),
                    index_head_dim=c.get("index_head_dim"))
        for layout, dt, when in (("bf16", "bf16", "SM90 default (auto)"), ("scaled_fp8", "fp8_e4m3", "SM90 fp8 (flashmla_kv)"),
                                 ("raw_fp8", "fp8_e4m3", "SM100/SM120 default (trtllm)")):
            b = dsa_bytes_per_token(kv_lora_rank=c["kv_lora_rank"], qk_rope_head_dim=c["qk_rope_head_dim"],
                                    index_head_dim=c["index_head_dim"], num_layers=m.num_layers, layout=layout)
            rows.append({"kv_cache_dtype": dt, "tp": "any", "layout": layout, "bytes_per_token": b, "note": when})
    elif m.family == "dsv4":
        from kvplan.layouts import dsv4

        g = dsv4.dsv4_geometry_from_config(m.raw_config or c)
        ratios: dict[int, int] = {}
        for r in g.compress_ratios:
            ratios[r] = ratios.get(r, 0) + 1
        info.update(compress_ratios=", ".join(f"ratio {r}: {n} layers" for r, n in sorted(ratios.items())),
                    sliding_window=g.sliding_window, v41=g.is_v41)
        for sm_major in (9, 10, 12):
            layout = dsv4.dsv4_select_layout(sm_major=sm_major, is_v41=g.is_v41, kv_cache_dtype="fp8_e4m3",
                                             attn_tp_size=8)
            res = dsv4.dsv4_pool_sizes(geometry=g, budget_bytes=10 * 2**30, layout=layout, page_size=256,
                                       max_running_requests=16, context_len=min(m.context_length, 1 << 20),
                                       chunked_prefill_size=2048)
            rows.append({"gpu": f"SM{sm_major}x", "tp": "any", "layout": layout, "swa_mode": res.swa_mode,
                         "bytes_per_full_token": res.bytes_per_full_token,
                         "bytes_per_swa_token": res.bytes_per_swa_token,
                         "full_tokens_per_10GiB": res.full_tokens})
    else:
        info["note"] = f"{m.family} models: per-layer-group breakdown not yet available"
    return info, rows

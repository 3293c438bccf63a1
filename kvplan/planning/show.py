"""``kvplan show MODEL``: geometry and KV bytes per token per GPU by dtype and TP (SGLang 0.5.23 rules)."""

from __future__ import annotations

from typing import Any

from kvplan.errors import InputError

_TPS = (1, 2, 4, 8, 16)


def show_rows(model_text: str, gpu_text: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

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
        from kvplan.geometry.gqa import gqa_bytes_per_token, gqa_kv_heads_per_rank

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
        from kvplan.geometry.mla import mla_bytes_per_token

        info.update(kv_lora_rank=c.get("kv_lora_rank"), qk_rope_head_dim=c.get("qk_rope_head_dim"))
        for dt in ("bf16", "fp8_e4m3"):
            b = mla_bytes_per_token(kv_lora_rank=c["kv_lora_rank"], qk_rope_head_dim=c["qk_rope_head_dim"],
                                    num_layers=m.num_layers, kv_dtype=dt)
            rows.append({"kv_cache_dtype": dt, "tp": "any", "bytes_per_token": b,
                         "note": "latent replicated on every TP rank"})
    elif m.family == "dsa":
        from kvplan.geometry.dsa import dsa_bytes_per_token

        info.update(kv_lora_rank=c.get("kv_lora_rank"), qk_rope_head_dim=c.get("qk_rope_head_dim"),
                    index_head_dim=c.get("index_head_dim"))
        for layout, dt, when in (("bf16", "bf16", "SM90 default (auto)"), ("scaled_fp8", "fp8_e4m3", "SM90 fp8 (flashmla_kv)"),
                                 ("raw_fp8", "fp8_e4m3", "SM100/SM120 default (trtllm)")):
            b = dsa_bytes_per_token(kv_lora_rank=c["kv_lora_rank"], qk_rope_head_dim=c["qk_rope_head_dim"],
                                    index_head_dim=c["index_head_dim"], num_layers=m.num_layers, layout=layout)
            rows.append({"kv_cache_dtype": dt, "tp": "any", "layout": layout, "bytes_per_token": b, "note": when})
    elif m.family == "dsv4":
        from kvplan.geometry import dsv4

        g = dsv4.dsv4_geometry_from_config(m.raw_config or c)
        ratios: dict[int, int] = {}
        for r in g.compress_ratios:
            ratios[r] = ratios.get(r, 0) + 1
        info.update(compress_ratios=", ".join(f"ratio {r}: {n} layers" for r, n in sorted(ratios.items())),
                    sliding_window=g.sliding_window, v41=g.is_v41)
        for sm_major, attn_tp in ((9, 8), (10, 8), (10, 1), (12, 8)):
            layout = dsv4.dsv4_select_layout(sm_major=sm_major, is_v41=g.is_v41, kv_cache_dtype="fp8_e4m3",
                                             attn_tp_size=attn_tp)
            res = dsv4.dsv4_pool_sizes(geometry=g, budget_bytes=10 * 2**30, layout=layout, page_size=256,
                                       max_running_requests=16, context_len=min(m.context_length, 1 << 20),
                                       chunked_prefill_size=2048)
            rows.append({"gpu": f"SM{sm_major}x", "attention_tp": attn_tp, "layout": layout, "swa_mode": res.swa_mode,
                         "bytes_per_full_token": res.bytes_per_full_token,
                         "bytes_per_swa_token": res.bytes_per_swa_token,
                         "full_tokens_per_10GiB": res.full_tokens})
    elif m.family == "hybrid_swa":
        from kvplan.geometry.swa import swa_bytes_per_layer_token, swa_layers_from_config

        L = swa_layers_from_config(m.raw_config or c)
        info.update(full_layers=len(L.full_layers), swa_layers=len(L.swa_layers), sliding_window=L.sliding_window)
        for group, n, heads, hd, vhd in (("full attention", len(L.full_layers), L.full_kv_heads, L.full_head_dim,
                                          L.full_v_head_dim),
                                         ("sliding window", len(L.swa_layers), L.swa_kv_heads, L.swa_head_dim,
                                          L.swa_v_head_dim)):
            for tp in _TPS:
                per_layer = swa_bytes_per_layer_token(kv_heads=heads, head_dim=hd, v_head_dim=vhd, attn_tp_size=tp,
                                                      kv_dtype="bf16")
                rows.append({"group": group, "layers": n, "tp": tp, "kv_heads_per_gpu": max(1, heads // tp),
                             "bytes_per_token_bf16": per_layer * n,
                             "pool": "full pool (max_total_num_tokens)" if group == "full attention"
                             else "SWA pool (ratio x full tokens)"})
    elif m.family == "hybrid_mamba":
        from kvplan.geometry.mamba import (
            mamba_geometry_from_config,
            mamba_hybrid_kv_cell,
            mamba_state_bytes_per_request,
        )

        g = mamba_geometry_from_config(m.raw_config or c)
        info.update(attention_layers=len(g.attention_layers), linear_layers=len(g.linear_layers), state_kind=g.kind)
        for tp in _TPS:
            try:
                kv = mamba_hybrid_kv_cell(geometry=g, attn_tp_size=tp, kv_dtype="bf16")
                state = mamba_state_bytes_per_request(geometry=g, tp_size=tp)
            except InputError:
                continue
            rows.append({"tp": tp, "attention_kv_bytes_per_token_bf16": kv, "state_bytes_per_request": state,
                         "note": "KV heads split by tp (replicated past the head count); state heads split by tp"})
    else:
        info["note"] = f"{m.family} models: per-layer-group breakdown not yet available"
    return info, rows

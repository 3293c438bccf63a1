"""vLLM engine structure: the release table, the per-family spec-builder registry, config validation (bad input is
exit 2 naming the field; a kvplan bug is not turned into bad input) and the free-at-start model.

Numbers are hand-derived from the formulas cited in kvplan/engines/vllm/*.py (vLLM 0.33.0 and older releases per
shared/reference/vllm-kv-sizing.md §8), not read back from kvplan.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.engines import runtime
from kvplan.engines.vllm import releases, specs
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm
from kvplan.errors import InputError
from kvplan.family import Family

GiB = 2**30
HF = Path(__file__).resolve().parent / "data" / "shared" / "hf-configs"
LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
}


def _hf(name: str) -> dict:
    return json.loads((HF / name / "config.json").read_text())


def _measured(cfg: dict, **kw) -> VllmInputs:
    return VllmInputs(
        **{"config": cfg, "device_bytes": 80 * GiB, "kv_cache_memory_bytes": 10 * GiB, "max_model_len": 32768, **kw}
    )


# ------------------------------------------------------------------------------------------------ releases


def test_release_rows_are_ordered_and_the_last_is_the_newest():
    firsts = [r.first for r in releases.RELEASES]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    assert releases.RELEASES[-1].version == releases.NEWEST_VERSION
    assert releases.release_for(None) is releases.RELEASES[-1]


@pytest.mark.parametrize(
    "before,at,rule,old,new",
    [
        ("0.7.3", "0.8.0", "v0", True, False),
        ("0.9.0.1", "0.9.1", "sliding_hybrid", False, True),  # kv_cache_coordinator.py first in the 0.9.1 wheel
        ("0.10.2", "0.11.0", "snapshot_after_comm", False, True),
        ("0.11.2", "0.12.0", "group_size_ratio", 0.0, 1.25),  # `max < min * 1.25` first in the 0.12.0 wheel
        ("0.13.0", "0.14.0", "ceil_requested", False, True),  # math.ceil in v1/worker/utils.py from 0.14.0
        ("0.13.0", "0.14.0", "chunked_local_hybrid", False, True),
        ("0.14.1", "0.15.0", "mamba_pc_needs_model_support", True, False),
        ("0.17.1", "0.18.0", "group_size_ratio", 1.25, 1.5),
        ("0.19.1", "0.20.0", "default_utilization", 0.9, 0.92),
        ("0.19.1", "0.20.0", "graph_estimate_default", False, True),
        ("0.27.1", "0.28.0", "mamba_align_default", False, True),  # prefix caching on for hybrids from 0.28.0
        ("0.25.1", "0.26.0", "async_in_flight", False, True),
        ("0.26.1", "0.27.0", "accounting", releases.Accounting.SUMMED, releases.Accounting.CONSUMED),
        # _get_packed_kv_cache_groups: absent in the 0.28.0 wheel, in v1/core/kv_cache_utils.py of 0.29.0
        ("0.28.0", "0.29.0", "dsv4_grouping", releases.DsV4Grouping.TUPLES, releases.DsV4Grouping.PACKED),
        # one capacity line "GPU KV cache size: %s tokens, Maximum concurrency ..." from 0.28.0 (two lines in 0.27.0)
        ("0.27.1", "0.28.0", "capacity_log", releases._V1_0_27.capacity_log, releases._V1_0_34.capacity_log),
        # is_state_bucket takes unsplit sliding buckets: absent in the 0.29.0 wheel, present in 0.30.0 / 0.31.0 / 0.32.0
        ("0.29.1", "0.30.0", "packed_sliding_states", False, True),
        # the FlashKDA checkpoint block (models/kimi_k3/nvidia/kda.py): absent in 0.28.0, present in 0.29.0
        ("0.28.1", "0.29.0", "prefill_checkpoint_mixers", frozenset(), frozenset({"flashkda"})),
        # MambaMixer2.get_kv_cache_spec num_prefill_checkpoint_blocks=1: absent in 0.31.0, present in 0.32.0
        ("0.31.1", "0.32.0", "prefill_checkpoint_mixers", frozenset({"flashkda"}), frozenset({"flashkda", "mamba2"})),
        # _get_kv_cache_bytes_per_block rounds to the lcm of get_block_stride_alignment(): the rounding is in the 0.31.0
        # wheel but no spec sets an alignment there; MultipleOf kernel-block alignments from 0.32.0
        ("0.31.1", "0.32.0", "block_stride_alignment", False, True),
        # attention-free models: is_prefix_caching_supported False in every wheel read (0.26.0 - 0.34.0)
        ("0.27.1", "0.28.0", "attention_free_prefix_caching", False, False),
    ],
)
def test_release_boundaries(before, at, rule, old, new):
    """Each boundary of docs/vllm.md's version table, one release either side."""
    assert getattr(releases.release_for(before), rule) == old
    assert getattr(releases.release_for(at), rule) == new


def test_mamba_cache_mode_is_none_in_0_22_to_0_27():
    """0.22.0 - 0.25.1 ``config/model.py`` ``is_prefix_caching_supported`` is False for ``attn_type == "hybrid"``
    (0.26.0 / 0.27.0: True, but ``_set_default_chunked_prefill_and_prefix_caching_args`` excludes ``is_hybrid``), so
    prefix caching is off and ``MambaModelConfig`` keeps mode "none": 1 block per Mamba group per request; 0.28.0
    turns it on -> "align", 2 blocks.  (tests/test_vllm_rules.py asserted "align" at 0.22 before the wheels were read.)"""
    for v in ("0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.1", "0.26.0", "0.27.1"):
        assert releases.release_for(v).mamba_align_default is False
    for v in ("0.28.0", "0.33.0", "0.34.0"):
        assert releases.release_for(v).mamba_align_default is True
    cfg = _hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    modes = {}
    for v in ("0.22.0", "0.25.1", "0.28.0"):
        p = plan_vllm(_measured(cfg, engine_version=v))
        modes[v] = [a for a in p.assumptions if a.startswith("Mamba cache mode")]
    assert modes["0.22.0"] == modes["0.25.1"] == ["Mamba cache mode none: 1 block(s) per Mamba group per request"]
    assert modes["0.28.0"] == ["Mamba cache mode align: 2 block(s) per Mamba group per request"]


def test_group_size_threshold_by_release():
    """Equal-size groups (``_get_kv_cache_groups_uniform_page_size``): gpt-oss-20b + a 1-layer EAGLE draft has 12
    sliding + 13 full layers: 13 < 1.25 x 12 = 15 -> groups of 13 from 0.12; 12 sliding + 16 full: 16 < 15 is false
    under 0.12-0.17 (groups of 12) but 16 < 1.5 x 12 = 18 from 0.18 (groups of 16); before 0.12: always the minimum."""

    def group(v, sw, full):
        r = releases.release_for(v).group_size_ratio
        return max(sw, full) if max(sw, full) < r * min(sw, full) else min(sw, full)

    assert (group("0.11.2", 12, 13), group("0.12.0", 12, 13), group("0.18.0", 12, 13)) == (12, 13, 13)
    assert (group("0.17.1", 12, 16), group("0.18.0", 12, 16)) == (12, 16)


def test_requested_memory_ceil_from_0_14():
    """requested = total x util: the float product (truncated to bytes) to 0.13.0, ``math.ceil`` from 0.14.0.
    H100 80 GB total 85,520,809,984 B x 0.9 = 76,968,728,985.6 -> 76,968,728,985 (0.13) / 76,968,728,986 (0.14)."""
    from kvplan.engines.vllm.budget import vllm_requested_bytes

    got = {
        v: vllm_requested_bytes(
            device_bytes=85_520_809_984, gpu_memory_utilization=0.9, ceil=releases.release_for(v).ceil_requested
        )
        for v in ("0.13.0", "0.14.0")
    }
    assert got == {"0.13.0": 76_968_728_985, "0.14.0": 76_968_728_986}


def test_v0_chunked_prefill_batch_by_release():
    """V0 with chunked prefill (on by default above 32K): 512 tokens in 0.6.4, 2048 from 0.6.5
    (``config.py`` ``SchedulerConfig.__post_init__``); without it max(max_model_len, 2048) in both."""
    kw = dict(device_bytes=24 * GiB, gpu_name="RTX 3090")
    assert releases.release_for("0.6.4").batch_defaults(max_model_len=40000, **kw)[:2] == (512, 256)
    assert releases.release_for("0.6.5").batch_defaults(max_model_len=40000, **kw)[:2] == (2048, 256)
    assert releases.release_for("0.7.3").batch_defaults(max_model_len=40000, **kw)[:2] == (2048, 256)
    assert releases.release_for("0.7.3").batch_defaults(max_model_len=20000, **kw)[:2] == (20000, 256)
    assert releases.release_for("0.7.3").v0 and releases.release_for("0.6.4").v0


def test_token_lines_by_window():
    """V0 blocks × block; 0.8-0.20 (blocks // groups) × min block; ≥0.21 int(conc × L).
    Gemma-3 (0.11.0 log): 89,994 blocks, 7 groups, block 16 -> 205,696; concurrency 89,994 / 1,798 = 50.05."""
    c = releases.PoolCount(
        num_blocks=89994,
        blocks_per_request=256 + 6 * 257,
        max_model_len=4096,
        block_size=16,
        num_groups=7,
        min_group_block_size=16,
    )
    assert releases.release_for("0.11.0").token_line(c) == (205_696, 89994 / 1798)
    assert releases.release_for("0.21.0").token_line(c) == (int(89994 / 1798 * 4096), 89994 / 1798)
    assert releases.release_for("0.6.4").token_line(c) == (89994 * 16, 89994 * 16 / 4096)


def test_block_size_rule_per_family():
    rel = releases.release_for(None)
    assert set(rel.block_rules) == set(Family)
    assert rel.block_size(Family.GQA, None) == (16, None)
    assert rel.block_size(Family.GQA, 32) == (32, None)
    assert rel.block_size(Family.MLA, None)[0] == 64 and rel.block_size(Family.MLA, None)[1]
    assert rel.block_size(Family.DSA, 128) == (128, None)
    assert rel.block_size(Family.DSV4, 16) == (256, None)


def test_version_text():
    assert releases.release_numbers("0.11.0rc2.dev98+g393de22d2") == (0, 11, 0)
    assert releases.release_numbers("1") == (1, 0, 0)
    with pytest.raises(InputError, match="not a vLLM version"):
        releases.release_for("latest")
    assert releases.release_for("0.1.0") is releases.RELEASES[0]  # older than every row: the oldest rules
    assert releases.release_for("7.0.0") is releases.RELEASES[-1]  # newer: the newest


def test_a_new_window_is_one_row(monkeypatch):
    """A hypothetical next release with another utilization default: one _after row, and the planner follows it
    (requested = ceil(80 GiB × 0.95) = 81,604,378,624 B)."""
    row = releases._after(releases.RELEASES[-1], (0, 99, 0), "0.99: test row", default_utilization=0.95)
    monkeypatch.setattr(releases, "RELEASES", (*releases.RELEASES, row))
    assert releases.release_for("0.99.1") is row and releases.release_for("0.33.0") is not row
    p = plan_vllm(
        VllmInputs(
            config=LLAMA,
            device_bytes=80 * GiB,
            engine_version="0.99.1",
            weight_bytes=16 * GiB,
            activation_bytes=GiB,
            non_torch_bytes=0,
            cuda_graph_bytes=0,
            max_model_len=8192,
        )
    )
    assert dict(p.budget_terms)["requested"] == math.ceil(80 * GiB * 0.95) == 81_604_378_624


# ------------------------------------------------------------------------------------------------ spec builders


def test_every_family_has_a_spec_builder():
    assert set(specs.SPEC_BUILDERS) == set(Family)


@pytest.mark.parametrize(
    "cfg,family",
    [
        (LLAMA, Family.GQA),
        ({**LLAMA, "attention_chunk_size": 8192}, Family.GQA),  # Llama-4: chunked layers are full in vLLM
        (
            {**LLAMA, "model_type": "gemma3_text", "sliding_window": 1024, "sliding_window_pattern": 6},
            Family.HYBRID_SWA,
        ),
        ("openai--gpt-oss-120b", Family.HYBRID_SWA),
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", Family.HYBRID_MAMBA),
        ("deepseek-ai--DeepSeek-V3", Family.MLA),
        ("nvidia--GLM-5.2-NVFP4", Family.DSA),
        ("deepseek-ai--DeepSeek-V4-Flash", Family.DSV4),
    ],
)
def test_vllm_family(cfg, family):
    cfg = _hf(cfg) if isinstance(cfg, str) else cfg
    assert specs.vllm_family(cfg) is family
    assert specs.build_model_kv(config=cfg, tp_size=1).family is family


def test_builders_are_looked_up_in_the_registry(monkeypatch):
    seen = []

    def spy(cfg, ctx):
        seen.append((ctx.family, ctx.num_layers, ctx.dtype_bytes))
        return specs.build_attention(cfg, ctx)

    monkeypatch.setitem(specs.SPEC_BUILDERS, Family.GQA, spy)
    m = specs.build_model_kv(config=LLAMA, tp_size=2)
    assert seen == [(Family.GQA, 32, 2)]
    # 8 KV heads / TP2 = 4 per rank × (128 + 128) × 2 B = 2,048 B per token per layer
    assert {x.token_bytes for x in m.layers} == {2048}


def test_nested_config_reads_the_text_config():
    """vLLM sizes from hf_text_config: a multimodal wrapper gives the same pool as the flat text config."""
    nested = {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "text_config": LLAMA,
        "vision_config": {"num_hidden_layers": 24},
    }
    a, b = plan_vllm(_measured(LLAMA)), plan_vllm(_measured(nested))
    assert (a.bytes_per_block, a.num_blocks) == (b.bytes_per_block, b.num_blocks) == (2_097_152, 5_120)


# ------------------------------------------------------------------------------------------------ bad input vs bugs


@pytest.mark.parametrize(
    "base,change,field",
    [
        (LLAMA, {"num_hidden_layers": "32"}, "num_hidden_layers"),
        (LLAMA, {"num_hidden_layers": 10**9}, "num_hidden_layers"),
        (LLAMA, {"head_dim": [128]}, "head_dim"),
        (LLAMA, {"model_type": ["llama"]}, "model_type"),
        (LLAMA, {"num_attention_heads": 0, "num_key_value_heads": None}, "num_attention_heads"),
        ("nvidia--GLM-5.2-NVFP4", {"index_topk_freq": "4"}, "index_topk_freq"),
        ("nvidia--GLM-5.2-NVFP4", {"index_topk_pattern": 7}, "index_topk_pattern"),
        ("deepseek-ai--DeepSeek-V4-Flash", {"compress_ratios": [0, None, 4]}, "compress_ratios"),
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"mamba_ssm_cache_dtype": "float7"}, "mamba_ssm_cache_dtype"),
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"mamba_num_heads": None}, "mamba_num_heads"),
        ("openai--gpt-oss-120b", {"sliding_window": 0}, "sliding_window"),
        ("openai--gpt-oss-120b", {"layer_types": [1, 2]}, "layer_types"),
    ],
)
def test_malformed_config_is_input_error_naming_the_field(base, change, field):
    cfg = {**(_hf(base) if isinstance(base, str) else base), **change}
    with pytest.raises(InputError) as err:
        plan_vllm(_measured(cfg, tp_size=1))
    assert err.value.exit_code == 2 and f"'{field}'" in err.value.one_line()


def _cli(*args: str):
    from kvplan.cli.app import app

    return CliRunner().invoke(app, list(args))


def _write(tmp_path: Path, cfg: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


MEASURED = (
    "-g",
    "h100-sxm",
    "--engine",
    "vllm",
    "--kv-cache-memory-bytes",
    "30GiB",
    "--weight-memory",
    "20GiB",
    "--format",
    "json",
)


def test_cli_malformed_config_exits_2_naming_the_field(tmp_path):
    """A field only the vLLM specs read (not in hfconfig's geometry check): one stderr line, exit 2."""
    cfg = {**_hf("nvidia--GLM-5.2-NVFP4"), "index_topk_freq": "x"}
    res = _cli("fit", "-m", _write(tmp_path, cfg), "--tp", "4", *MEASURED)
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvplan: error: ") and "'index_topk_freq'" in lines[0]


@pytest.mark.parametrize("exc", [KeyError("num_blocks"), TypeError("unsupported operand"), ZeroDivisionError()])
def test_internal_error_is_not_turned_into_input_error(monkeypatch, exc):
    """A bug inside the planner (here injected into the grouping step) reaches the caller as itself."""
    import kvplan.engines.vllm.planner as planner

    def broken(*args, **kw):
        raise exc

    monkeypatch.setattr(planner, "kv_groups", broken)
    with pytest.raises(type(exc)):
        plan_vllm(_measured(LLAMA))


def test_internal_error_in_a_spec_builder_exits_1(monkeypatch, tmp_path):
    def broken(cfg, ctx):
        return {}["missing"]  # a KeyError inside kvplan, not a config problem

    monkeypatch.setitem(specs.SPEC_BUILDERS, Family.GQA, broken)
    with pytest.raises(KeyError):
        specs.build_model_kv(config=LLAMA, tp_size=1)
    res = _cli("fit", "-m", _write(tmp_path, LLAMA), *MEASURED)
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("kvplan: internal error: KeyError"), res.stderr


# ------------------------------------------------------------------------------------------------ runtime


@dataclasses.dataclass
class _Gpu:
    memory_mib: int
    cuda_total_bytes: int | None
    interconnect: str


def test_snapshot_follows_the_communicators_from_0_11():
    assert runtime.snapshot_includes_communicators(engine="sglang", engine_version="0.10.2")
    assert runtime.snapshot_includes_communicators(engine="vllm", engine_version=None)
    assert not runtime.snapshot_includes_communicators(engine="vllm", engine_version="0.10.2")
    assert runtime.snapshot_includes_communicators(engine="vllm", engine_version="0.11.0")
    assert not runtime.snapshot_includes_communicators(engine="vllm", engine_version="dev")  # no number: oldest


def test_runtime_overhead_by_interconnect():
    ctx, nv = int(0.55 * GiB), int(1.35 * GiB)
    assert runtime.runtime_overhead_bytes(world_size=1, interconnect="nvlink") == ctx
    assert runtime.runtime_overhead_bytes(world_size=8, interconnect="nvlink") == ctx + nv
    assert (
        runtime.runtime_overhead_bytes(world_size=8, interconnect="pcie")
        == ctx + 8 * int(0.0625 * GiB)
        == 1_127_428_915
    )  # docstring: 0.55 + 8 × 0.0625 = 1.05 GiB
    assert runtime.runtime_overhead_bytes(world_size=8, interconnect="xgmi") == ctx + 8 * int(0.45 * GiB)
    assert runtime.runtime_overhead_bytes(world_size=4, interconnect="other") == ctx + 4 * int(0.0625 * GiB)
    with pytest.raises(ValueError):
        runtime.runtime_overhead_bytes(world_size=0, interconnect="pcie")


def test_modelled_free_at_start():
    """RTX PRO 6000 (97,887 MiB, no CUDA total), SGLang TP8 PCIe: 95.02 − 0.55 − 8 × 0.0625 GiB; vLLM 0.10: context
    only."""
    gpu = _Gpu(memory_mib=97887, cuda_total_bytes=None, interconnect="pcie")
    total = 97887 * 2**20 - int(0.57 * GiB)
    free, why = runtime.modelled_free_at_start(gpu=gpu, world_size=8)
    assert free == total - int(0.55 * GiB) - 8 * int(0.0625 * GiB) and "pcie communicators" in why
    free, why = runtime.modelled_free_at_start(gpu=gpu, world_size=8, engine="vllm", engine_version="0.10.2")
    assert free == total - int(0.55 * GiB) and "before NCCL" in why


def test_dsv4_unsplit_sliding_buckets_are_state_buckets_from_0_30():
    """Packed grouping without a repeat pattern (every DeepSeek-V4 layer compress ratio 128, so no bucket mixes page
    sizes and ``repeats_per_group`` is None): 0.29 keeps each bucket whole, 0.30+ caps the sliding buckets at the
    states one block already holds (``_get_packed_kv_cache_groups`` ``is_state_bucket``, v0.30.0 / v0.33.0).

    Pages (fp8_ds_mla 584 B slots, aligned up to 576 B): SWA ring 64 x 584 = 37,376 -> 37,440; compressed latent
    256 / 128 x 584 = 1,168 -> 1,728; compressor state (block 8) 8 x 2 x 512 x 4 = 32,768 -> 32,832.
    0.29: three groups, 4 x 37,440 = 149,760 B per block (the widest).
    0.30: anchor = max(37,440; 4 x 1,728 = 6,912; 32,832) = 37,440; SWA: cdiv(4, 37,440 // 37,440) = 4 groups,
    state: cdiv(4, 37,440 // 32,832 = 1) = 4 groups, compressed 1 -> 9 groups, 37,440 B per block.
    Blocks per request (L 30,000, B 16,384, in flight (pp + 1) x B = 32,768 from 0.26): SWA
    cdiv(min(127 + 32,768, 30,000), 64) + 1 = 470, compressed cdiv(30,000, 256) = 118, state
    cdiv(30,000, 8) + 1 = 3,751: 0.29 470 + 118 + 3,751 = 4,339; 0.30 4 x 470 + 118 + 4 x 3,751 = 17,002.
    Blocks from 10 GiB: 10,737,418,240 // 149,760 = 71,697 and // 37,440 = 286,790."""
    cfg = {
        **_hf("deepseek-ai--DeepSeek-V4-Flash"),
        "num_hidden_layers": 4,
        "compress_ratios": [128] * 4,
        "num_nextn_predict_layers": 0,
    }
    common = dict(
        config=cfg,
        device_bytes=94 * GiB,
        kv_cache_dtype="fp8",
        block_size=256,
        max_model_len=30000,
        max_num_batched_tokens=16384,
        kv_cache_memory_bytes=10 * GiB,
    )
    old = plan_vllm(VllmInputs(**common, engine_version="0.29.0"))
    assert (old.bytes_per_block, old.num_groups, old.blocks_per_request) == (149_760, 3, 4_339)
    assert old.num_blocks == 71_697
    # on in the table from the 0.30 row (issue 12: read in the 0.30.0, 0.31.0, 0.32.0, 0.33.0 and 0.34.0 wheels)
    assert releases.release_for("0.29.9").packed_sliding_states is False
    assert releases.release_for("0.30.0").packed_sliding_states is True
    for v in ("0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"):
        new = plan_vllm(VllmInputs(**common, engine_version=v))
        assert (new.bytes_per_block, new.num_groups, new.blocks_per_request) == (37_440, 9, 17_002)
        assert new.num_blocks == 286_790


def test_mamba_cache_mode_all_with_prefix_caching_0_11_to_0_27():
    """``--enable-prefix-caching`` on a ``SupportsMambaPrefixCaching`` model (Nemotron-3-Nano, NemotronHForCausalLM):
    one Mamba state per block (mode "all", ``MambaSpec.max_memory_usage_bytes`` = ``cdiv(L, block)`` pages) and a
    chunk-aligned block (``HybridAttentionMambaModelConfig.verify_and_update_config``, v0.14.0 / v0.15.0; v0.22.0
    ``Platform._align_hybrid_block_size``); 0.28 sets "align" instead (``MambaModelConfig``, v0.28.0).

    Attention: 2 KV heads x 128 x 2 (K, V) x 2 B = 1,024 B per token per layer.  Mamba state: conv 3 x (64 x 64 +
    2 x 8 x 128) x 2 B = 36,864 + SSM 64 x 64 x 128 x 4 B = 2,097,152 -> 2,134,016 B.
    none / align: 16 x cdiv(2,134,016, 16 x 1,024) = 16 x 131 = 2,096 tokens, page 2,146,304 B.
    all: cdiv(2,134,016, 1,024) = 2,084 tokens, step lcm(chunk_size 128, 16) = 128 -> 128 x cdiv(2,084, 128) =
    128 x 17 = 2,176 tokens, page 2,228,224 B.  23 Mamba layers, 6 attention: groups of 6 -> 4 Mamba groups + 1
    full (one padding layer); bytes per block 6 x page.  At L 32,768: full cdiv(32,768, 2,176) = 16 blocks, each
    Mamba group 16 ("all") -> 5 x 16 = 80 per request; none 4 x 1 + cdiv(32,768, 2,096) = 16 -> 20; align 24.
    Blocks from 10 GiB: 10,737,418,240 // (6 x 2,228,224 = 13,369,344) = 803; // 12,877,824 = 833.
    With one speculative token "all" adds 1 block per Mamba group from the 0.21 row (the wheels: from 0.22.0):
    4 x 17 + 16 = 84; 0.14 none: 80."""
    cfg = _hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    common = dict(
        config=cfg,
        device_bytes=120 * GiB,
        max_model_len=32768,
        max_num_batched_tokens=8192,
        kv_cache_memory_bytes=10 * GiB,
    )

    def plan(v: str, pc: bool | None, spec: int = 0):
        return plan_vllm(VllmInputs(**common, engine_version=v, enable_prefix_caching=pc, num_speculative_tokens=spec))

    for v in ("0.11.2", "0.14.0", "0.15.0", "0.21.0", "0.25.1", "0.27.1"):
        p = plan(v, True)
        assert (p.bytes_per_block, p.blocks_per_request, p.num_blocks) == (13_369_344, 80, 803), v
        assert [g["kind"] for g in p.groups].count("mamba_all") == 4
        assert {g["block_size"] for g in p.groups} == {2176}
        # (2,228,224 - 2,134,016) / 2,134,016 = 4.41% Mamba padding, as vLLM logs it
        assert (
            "Padding mamba page size by 4.41% to ensure that mamba page size and attention page size are "
            "exactly equal." in p.warnings
        )
    off = plan("0.25.1", False)  # prefix caching off by default for hybrids up to 0.27: mode "none"
    assert (off.bytes_per_block, off.blocks_per_request, off.num_blocks) == (12_877_824, 20, 833)
    assert plan("0.25.1", None).blocks_per_request == 20
    for v in ("0.28.0", "0.31.0"):  # "align": 2 blocks per Mamba group, the "none" block size
        assert (plan(v, True).blocks_per_request, plan(v, None).num_blocks) == (24, 833)
    for v in ("0.32.0", "0.34.0"):  # + the Mamba2 prefill-checkpoint block: 16 + 4 x 3 = 28
        assert (plan(v, True).blocks_per_request, plan(v, None).num_blocks) == (28, 833)
    assert plan("0.25.1", True, spec=1).blocks_per_request == 84
    assert plan("0.14.0", True, spec=1).blocks_per_request == 80
    # a hybrid without SupportsMambaPrefixCaching keeps "align" in 0.15-0.27 and prefix caching off up to 0.14
    assert specs.supports_mamba_prefix_caching(cfg) is True
    assert specs.supports_mamba_prefix_caching({"architectures": ["Qwen3NextForCausalLM"]}) is False


# ------------------------------------------------------------------------------------------------ issue 12: 0.29-0.32


def test_align_blocks_by_release():
    """``MambaSpec.max_memory_usage_bytes`` in "align": ``page × (2 + spec + num_prefill_checkpoint_blocks)``
    (v1/kv_cache_interface.py, v0.29.0 - v0.34.0); the checkpoint block is 1 for a Mamba2 mixer from 0.32.0 and for
    a KDA layer on FlashKDA from 0.29.0, 0 otherwise."""
    blocks = releases.Release.align_blocks
    assert blocks(releases.release_for("0.31.0"), state_mixer="mamba2", num_speculative_tokens=0) == 2
    assert blocks(releases.release_for("0.32.0"), state_mixer="mamba2", num_speculative_tokens=0) == 3
    assert blocks(releases.release_for("0.34.0"), state_mixer="mamba2", num_speculative_tokens=2) == 2 + 2 + 1
    assert blocks(releases.release_for("0.34.0"), state_mixer="gdn", num_speculative_tokens=0) == 2
    assert blocks(releases.release_for("0.34.0"), state_mixer="mamba1", num_speculative_tokens=0) == 2
    assert blocks(releases.release_for("0.34.0"), state_mixer=None, num_speculative_tokens=0) == 2
    assert blocks(releases.release_for("0.28.0"), state_mixer="flashkda", num_speculative_tokens=0) == 2
    assert blocks(releases.release_for("0.29.0"), state_mixer="flashkda", num_speculative_tokens=0) == 3
    assert blocks(releases.release_for("0.29.0"), state_mixer="mamba2", num_speculative_tokens=0) == 2


def test_nemotron_h_align_takes_the_checkpoint_block_from_0_32():
    """Nemotron-3-Nano (Mamba2 mixers, ``hybrid_override_pattern``), 10 GiB of KV, L 32,768, default prefix
    caching (on for hybrids from 0.28: "align").  Pages as in test_mamba_cache_mode_all_with_prefix_caching_0_11_to_0_27:
    block 2,096 tokens, 6 x 2,146,304 = 12,877,824 B per block (4 Mamba groups of 6 + 1 full group of 6),
    10,737,418,240 // 12,877,824 = 833 blocks.  Per request: full cdiv(32,768, 2,096) = 16, each Mamba group 2
    (0.31) or 2 + 0 + 1 = 3 (0.32+): 16 + 4 x 2 = 24 and 16 + 4 x 3 = 28.  Concurrency 833 / 24 = 34.71x and
    833 / 28 = 29.75x; tokens int(29.75 x 32,768) = int(974,848.0) = 974,848 (0.32)."""
    cfg = _hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    before = plan_vllm(_measured(cfg, engine_version="0.31.0", max_num_batched_tokens=8192))
    after = plan_vllm(_measured(cfg, engine_version="0.32.0", max_num_batched_tokens=8192))
    assert (before.bytes_per_block, before.num_blocks, before.blocks_per_request) == (12_877_824, 833, 24)
    assert (after.bytes_per_block, after.num_blocks, after.blocks_per_request) == (12_877_824, 833, 28)
    assert round(before.max_concurrency, 2) == 34.71 and round(after.max_concurrency, 2) == 29.75
    assert after.gpu_kv_cache_tokens == 974_848
    assert "Mamba cache mode align: 3 block(s) per Mamba group per request" in after.assumptions
    assert "Mamba cache mode align: 2 block(s) per Mamba group per request" in before.assumptions
    # prefix caching off (--no-enable-prefix-caching): mode "none", 1 block, no checkpoint: 16 + 4 = 20
    off = plan_vllm(_measured(cfg, engine_version="0.34.0", max_num_batched_tokens=8192, enable_prefix_caching=False))
    assert off.blocks_per_request == 20


def test_prefix_caching_default_is_stated_for_hybrids():
    """Without the flag the plan says which default it used: off for hybrids up to 0.27, on from 0.28
    (``_set_default_chunked_prefill_and_prefix_caching_args``, v0.27.0 / v0.28.0); with the flag, no such line; a
    model without state layers gets none (prefix caching does not change its KV pool)."""
    cfg = _hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")

    def pc_lines(v, **kw):
        return [
            a for a in plan_vllm(_measured(cfg, engine_version=v, **kw)).assumptions if a.startswith("prefix caching")
        ]

    assert pc_lines("0.27.0") == [
        "prefix caching off: the default of vLLM 0.27.0 for hybrid models "
        "(--enable-prefix-caching / --no-enable-prefix-caching set it)"
    ]
    assert pc_lines("0.34.0") == [
        "prefix caching on: the default of vLLM 0.34.0 for hybrid models "
        "(--enable-prefix-caching / --no-enable-prefix-caching set it)"
    ]
    assert pc_lines("0.34.0", enable_prefix_caching=True) == []
    p = plan_vllm(_measured(LLAMA, engine_version="0.34.0"))
    assert not [a for a in p.assumptions if a.startswith("prefix caching")]


def _kda_cfg(**lac_extra) -> dict:
    """A Kimi-K3-style KDA + MLA hybrid (the Kimi-Linear geometry, 4 layers: KDA 1-3, MLA 4)."""
    cfg = json.loads(
        (
            Path(__file__).resolve().parent / "validation" / "logs_issue13" / "kimi-linear-48b-a3b.config.json"
        ).read_text()
    )
    cfg["num_hidden_layers"] = 4
    lac = dict(cfg["linear_attn_config"], kda_layers=[1, 2, 3], full_attn_layers=[4], **lac_extra)
    cfg["linear_attn_config"] = lac
    return cfg


def test_kda_flashkda_checkpoint_block():
    """``kda_prefill_checkpoint_alignment("flashkda")`` = 16 -> ``num_prefill_checkpoint_blocks`` = 1
    (``models/kimi_k3/nvidia/kda.py``, v0.29.0 / v0.33.0): FlashKDA needs SM 9 / 10 / 12, head_dim 128, bf16 and a
    ``gate_lower_bound``.  So "align" is 2 + 0 + 1 = 3 blocks per KDA group on an H100 (SM 9) with the bound, 2
    without it (Kimi-Linear-48B), 2 on SM 8, 2 under 0.28.  One request: the MLA group's cdiv(L, block) + the KDA
    groups' blocks; the difference between 3 and 2 per KDA group is the number of KDA groups."""
    assert specs.kda_mixer({"gate_lower_bound": -5.0, "head_dim": 128}, sm_major=9) == "flashkda"
    assert specs.kda_mixer({"gate_lower_bound": -5.0, "head_dim": 128}, sm_major=12) == "flashkda"
    assert specs.kda_mixer({"gate_lower_bound": -5.0, "head_dim": 128}, sm_major=8) == "kda"
    assert specs.kda_mixer({"gate_lower_bound": -5.0, "head_dim": 64}, sm_major=9) == "kda"
    assert specs.kda_mixer({"head_dim": 128}, sm_major=10) == "kda"
    assert specs.kda_mixer({"gate_lower_bound": None, "head_dim": 128}, sm_major=10) == "kda"

    def plan(v, cfg, sm):
        return plan_vllm(_measured(cfg, engine_version=v, sm_major=sm, max_num_batched_tokens=8192))

    k3, k1 = _kda_cfg(gate_lower_bound=-5.0), _kda_cfg()
    base = plan("0.34.0", k1, 9)
    kda_groups = sum(1 for g in base.groups if g["kind"] == "mamba")
    assert kda_groups >= 1
    assert plan("0.34.0", k3, 9).blocks_per_request == base.blocks_per_request + kda_groups
    assert plan("0.29.0", k3, 9).blocks_per_request == plan("0.29.0", k1, 9).blocks_per_request + kda_groups
    assert plan("0.28.0", k3, 9).blocks_per_request == plan("0.28.0", k1, 9).blocks_per_request
    assert plan("0.34.0", k3, 8).blocks_per_request == plan("0.34.0", k1, 8).blocks_per_request


def test_deployment_prefix_caching_reaches_the_planner():
    """``Deployment.enable_prefix_caching`` (the registry flag) goes through the vLLM adapter: None = the release's
    default, False = "none" (1 block per Mamba group)."""
    from kvplan.deployment import Deployment
    from kvplan.engines.vllm.adapter import _inputs
    from kvplan.hfconfig.spec import ModelSpec

    assert Deployment().enable_prefix_caching is None
    for given in (None, True, False):
        dep = Deployment(model="x", engine="vllm", enable_prefix_caching=given)
        model = ModelSpec.__new__(ModelSpec)
        for k, v in dict(raw_config=LLAMA, config=LLAMA, quantization=None, checkpoint_bytes=None).items():
            object.__setattr__(model, k, v)
        assert _inputs(dep, model, None, 80 * GiB).enable_prefix_caching is given


# ------------------------------------------------------------------------------------------------ issue 12 residuals


def test_block_stride_bytes_by_release():
    """``round_up(bytes_per_block, lcm(alignments))`` from 0.32 (``_get_kv_cache_bytes_per_block``, v0.32.0 / v0.34.0):
    50,432 B with alignments (656, 1): 50,432 / 656 = 76.9 -> 77 x 656 = 50,512; (64, 96) -> lcm 192, 50,432 =
    262.67 x 192 -> 263 x 192 = 50,496; a multiple stays; 0.31 and older: unchanged."""
    r31, r32, r34 = (releases.release_for(v) for v in ("0.31.0", "0.32.0", "0.34.0"))
    assert r32.block_stride_bytes(bytes_per_block=50_432, alignments=(656, 1)) == 50_512
    assert r34.block_stride_bytes(bytes_per_block=50_432, alignments=(64, 96)) == 50_496
    assert r34.block_stride_bytes(bytes_per_block=41_984, alignments=(656,)) == 41_984  # 64 x 656
    assert r34.block_stride_bytes(bytes_per_block=50_432, alignments=()) == 50_432
    assert r31.block_stride_bytes(bytes_per_block=50_432, alignments=(656, 1)) == 50_432


def test_block_stride_alignment_reaches_the_pool():
    """A spec with an alignment (here 100,000 B on every layer, not a vLLM value): Llama-8B shape, 4,096 B/token x
    16 = 65,536 B per page, one group of 32 -> 2,097,152 B per block, rounded up to 2,100,000 from 0.32; 10 GiB ->
    10,737,418,240 // 2,100,000 = 5,113 blocks (0.32) and // 2,097,152 = 5,120 (0.31)."""
    from kvplan.engines.vllm import planner
    from kvplan.engines.vllm.grouping import kv_groups

    model = specs.build_model_kv(config=LLAMA, tp_size=1)
    model = dataclasses.replace(
        model, layers=tuple(dataclasses.replace(x, stride_alignment=100_000) for x in model.layers)
    )
    for v, bpb in (("0.31.0", 2_097_152), ("0.32.0", 2_100_000)):
        rel = releases.release_for(v)
        groups = kv_groups(model, 16, [], rel)
        assert planner._stage_bytes_per_block(model, groups, 1, rel) == [bpb]
        assert 10 * GiB // bpb == {"0.31.0": 5_120, "0.32.0": 5_113}[v]


@pytest.mark.parametrize(
    "name",
    [
        "Qwen--Qwen3-8B",
        "openai--gpt-oss-120b",
        "deepseek-ai--DeepSeek-V3",
        "zai-org--GLM-5",
        "deepseek-ai--DeepSeek-V4-Flash",
        "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    ],
)
def test_block_stride_alignment_changes_no_family_kvplan_prices(name):
    """The 0.32+ alignment changes none of kvplan's families on CUDA (docs/vllm.md): every spec kvplan builds has
    alignment 1, so 0.34.0's bytes per block is the largest group's (no rounding).  Why 1 (v0.34.0 wheel): FlashAttention
    / Triton declare ``MultipleOf(16)`` (not all fixed sizes: no alignment); FlashMLA ``[64]`` and the V3.2 indexer
    ``[64]`` with block 64 -> gcd(64, 64) = 64 = block -> 1; DeepSeek-V4's MLA / indexer ``[256]`` with block 256 -> 1,
    its compressor ``MultipleOf(1)`` and SWA ``MultipleOf(32)`` none; Mamba ``state_alignment`` 1 (16 only with
    FlashInfer ReplaySSM).  The sparse-MLA row alignment (656 B, fp8_ds_mla) divides its 64 x 656 = 41,984 B page in
    the layer-outer LBNHC layout DeepSeek-V3.2 / GLM-5 get; DeepSeek-V4 (BLHNC, its indexer's layout) has only 1s."""
    cfg = _hf(name)
    p = plan_vllm(
        _measured(
            cfg, engine_version="0.34.0", tp_size=8 if "V4" in name or "GLM" in name else 1, max_num_batched_tokens=8192
        )
    )
    assert all(x.stride_alignment == 1 for x in specs.build_model_kv(config=cfg, tp_size=1).layers)
    assert p.bytes_per_block == max(g["group_bytes_per_block"] for g in p.groups)


def _attention_free(arch: str) -> dict:
    """Nemotron-3-Nano with its 6 attention layers (``*``) made MLP layers (``-``): 23 Mamba2 layers, no attention;
    ``architectures`` = ``arch`` (NemotronHForCausalLM is ``IsHybrid`` whatever its pattern, Mamba2ForCausalLM
    ``IsAttentionFree``)."""
    cfg = _hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    return dict(cfg, hybrid_override_pattern=cfg["hybrid_override_pattern"].replace("*", "-"), architectures=[arch])


def test_attention_free_models_keep_prefix_caching_off():
    """vLLM 0.34.0 ``ModelConfig.is_prefix_caching_supported``: False for ``attn_type == "attention_free"``
    (``IsAttentionFree``: ``MambaForCausalLM``, ``Mamba2ForCausalLM``), True for "hybrid" -- so with neither flag an
    attention-free model has Mamba cache mode "none" (1 block per request) where the same layers as an ``IsHybrid``
    class get "align" with the Mamba2 checkpoint block (3).  One group of 23 Mamba layers; 217 blocks either way
    (the page is as kvplan sizes it: see docs/vllm.md for what is not modelled for attention-free models).
    Tokens: int(217 / 1 x 32,768) = 7,110,656 and int(217 / 3 x 32,768) = int(2,370,218.67) = 2,370,218."""
    free = plan_vllm(
        _measured(_attention_free("Mamba2ForCausalLM"), engine_version="0.34.0", max_num_batched_tokens=8192)
    )
    hyb = plan_vllm(
        _measured(_attention_free("NemotronHForCausalLM"), engine_version="0.34.0", max_num_batched_tokens=8192)
    )
    assert free.num_groups == hyb.num_groups == 1 and free.num_blocks == hyb.num_blocks == 217
    assert (free.blocks_per_request, hyb.blocks_per_request) == (1, 3)
    assert (free.gpu_kv_cache_tokens, hyb.gpu_kv_cache_tokens) == (7_110_656, 2_370_218)
    assert (
        "prefix caching off: the default of vLLM 0.34.0 for attention-free models (--enable-prefix-caching / "
        "--no-enable-prefix-caching set it)" in free.assumptions
    )
    assert "Mamba cache mode none: 1 block(s) per Mamba group per request" in free.assumptions
    # --enable-prefix-caching still turns it on ("This model does not officially support prefix caching"): align
    on = plan_vllm(
        _measured(
            _attention_free("Mamba2ForCausalLM"),
            engine_version="0.34.0",
            max_num_batched_tokens=8192,
            enable_prefix_caching=True,
        )
    )
    assert on.blocks_per_request == 3
    assert specs.is_attention_free({"architectures": ["FalconMambaForCausalLM"]})
    assert not specs.is_attention_free({"architectures": ["NemotronHForCausalLM"]}) and not specs.is_attention_free({})
    for v, free_on, hyb_on in (("0.27.0", False, False), ("0.28.0", False, True), ("0.34.0", False, True)):
        rel = releases.release_for(v)
        assert (rel.prefix_caching_default(attention_free=True), rel.prefix_caching_default(attention_free=False)) == (
            free_on,
            hyb_on,
        )

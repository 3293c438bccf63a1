"""Each rule written once (issue 21 item 5): the DeepSeek-V4.1 PP refusal, the request-cap clamp, vLLM's hybrid
block alignment, the device total.  Each test finds the rule's one home and checks a hand-derived number or the
text that only that home writes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang.pools.dsv4.eras import V41_PIPELINE_REFUSAL, refuse_v41_pipeline
from kvplan.errors import InputError
from kvplan.planning.plan import fit
from tests import _ast_cache as package_ast

PKG = Path(__file__).resolve().parents[1] / "kvplan"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


def _modules_with(text: str) -> list[str]:
    return sorted(str(p.relative_to(PKG)) for p in package_ast.package_files() if text in package_ast.source(p))


# ---------------------------------------------------------------------------------------------------------------
# DeepSeek-V4.1 pipeline parallelism (SGLang deepseek_v4_hook.validate_deepseek_v41_features)
# ---------------------------------------------------------------------------------------------------------------


def test_v41_pp_refusal_text_is_written_in_one_module():
    assert _modules_with("does not support pipeline parallelism") == ["engines/sglang/pools/dsv4/eras.py"]


def test_v41_pp_refusal_function():
    with pytest.raises(InputError) as e:
        refuse_v41_pipeline(is_v41=True, pp_size=2, release=None)
    assert e.value.field == "--pp-size" and V41_PIPELINE_REFUSAL in str(e.value)
    refuse_v41_pipeline(is_v41=True, pp_size=1, release=None)  # no PP: nothing to refuse
    refuse_v41_pipeline(is_v41=False, pp_size=4, release=None)  # V4 / V4-Pro take PP
    refuse_v41_pipeline(is_v41=True, pp_size=2, release="0.5.15")  # no V4.1 at all there: the release check's job


@pytest.mark.parametrize("algo", [None, "DSPARK"])
def test_v41_pp_refused_by_fit_with_and_without_speculation(algo):
    dep = Deployment(engine="sglang", model=V41, gpu="h200", tp=8, pp=2, num_gpus=16, speculative_algorithm=algo)
    with pytest.raises(InputError) as e:
        fit(dep)
    assert e.value.field == "--pp-size" and V41_PIPELINE_REFUSAL in str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# Device total (kvplan.inputs.presets.device.device_total, re-exported by kvplan.engines.runtime): the one rule;
# the planners, the log plausibility bound, HardwarePreset.device_bytes and `kvplan gpus` all read it
# ---------------------------------------------------------------------------------------------------------------

DEVICE_RULE = "inputs/presets/device.py"


def _const(node: ast.expr) -> int | None:
    """The value of an integer constant expression built with ``**``, ``*`` and ``<<`` (None otherwise)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.Mult | ast.LShift):
        a, b = _const(node.left), _const(node.right)
        if a is None or b is None:
            return None
        return a**b if isinstance(node.op, ast.Pow) else a * b if isinstance(node.op, ast.Mult) else a << b
    return None


def _is_mib_factor(node: ast.expr) -> bool:
    """``2**20``, ``1 << 20``, ``1024 * 1024``, ``1048576`` or the ``MiB`` constant (a name or ``units.MiB``)."""
    if isinstance(node, ast.Name | ast.Attribute):
        return (node.id if isinstance(node, ast.Name) else node.attr) == "MiB"
    return _const(node) == 2**20


def _names_memory_mib(node: ast.expr) -> bool:
    """A preset's nvidia-smi MiB field: ``g.memory_mib`` / ``memory_mib`` (not ``gpu_memory_mib``, SGLang's MiB)."""
    return (isinstance(node, ast.Attribute) and node.attr == "memory_mib") or (
        isinstance(node, ast.Name) and node.id == "memory_mib"
    )


def _device_total_sites(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every place a module computes a device total itself: the preset's MiB times 2**20 (in any
    spelling, either order, also as ``<< 20``), or ``cuda_total_bytes or ...`` (the recorded-else-estimated choice)."""
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            pairs = ((node.left, node.right), (node.right, node.left))
            if any(_names_memory_mib(a) and _is_mib_factor(b) for a, b in pairs):
                sites.append((node.lineno, "memory_mib * 2**20"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift) and _names_memory_mib(node.left):
            sites.append((node.lineno, "memory_mib << 20"))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            first = node.values[0]
            if isinstance(first, ast.Attribute) and first.attr == "cuda_total_bytes":
                sites.append((node.lineno, "cuda_total_bytes or ..."))
    return sites


def test_device_total_is_computed_in_one_module():
    found = {}
    for path in package_ast.package_files():
        rel = str(path.relative_to(PKG))
        sites = _device_total_sites(package_ast.tree(path))
        if sites:
            found[rel] = sites
    assert sorted(found) == [DEVICE_RULE], found
    assert [what for _, what in found[DEVICE_RULE]] == ["memory_mib * 2**20"]  # the estimate, once
    # the 0.57 GiB driver reservation is defined and subtracted in the rule's module alone
    assert _modules_with("DRIVER_RESERVE_BYTES") == [DEVICE_RULE]
    assert _modules_with("0.57 * GiB") == [DEVICE_RULE]


def test_the_finder_sees_every_spelling():
    # the AST check above can fail: each spelling of the second rule that plausible.py / schema.py used is found
    for src in (
        "x = g.cuda_total_bytes or g.memory_mib * 2**20",
        "x = memory_mib * MiB - r",
        "x = 1024 * 1024 * gpu.memory_mib",
        "x = units.MiB * self.memory_mib",
        "x = g.memory_mib << 20",
        "x = g.memory_mib * 1048576",
        "x = g.memory_mib * (1 << 20)",
    ):
        assert _device_total_sites(ast.parse(src)), src
    # SGLang's MiB heuristics and a bare MiB figure are not a device total
    for src in ("x = (gpu_memory_mib - 1024 * 13) / gpu_memory_mib", "x = g.memory_mib", "x = g.memory_mib * 2"):
        assert not _device_total_sites(ast.parse(src)), src


def test_every_reader_asks_the_one_rule():
    for mod in (
        "engines/sglang/planner.py",
        "engines/vllm/adapter.py",
        "planning/whatif.py",
        "planning/plan.py",
        "views/listing.py",
        "inputs/logs/plausible.py",
        "inputs/presets/schema.py",
    ):
        assert "device_total(" in (PKG / mod).read_text(encoding="utf-8"), mod
    from kvplan.engines import runtime
    from kvplan.inputs.presets import device

    assert runtime.device_total is device.device_total
    assert runtime.cuda_total_from_nvidia_smi is device.cuda_total_from_nvidia_smi


def test_plausibility_bound_and_preset_property_are_the_device_total():
    from kvplan.inputs import presets
    from kvplan.inputs.logs.plausible import largest_catalogued_gpu
    from kvplan.inputs.presets.device import device_total

    gpus = presets.all_gpus()
    assert all(g.device_bytes == device_total(g)[0] for g in gpus)
    top = max(device_total(g)[0] for g in gpus)
    got = largest_catalogued_gpu()
    assert got is not None and got[1] == top
    # the shipped catalogue's largest: MI350X / MI355X, HIP totalGlobalMem 309,220,868,096 B recorded (294,896 MiB)
    assert got == ("mi350x", 309_220_868_096) == ("mi350x", 294_896 * 2**20)


def test_gpus_json_shows_device_total_for_every_preset():
    import json

    from typer.testing import CliRunner

    from kvplan.cli.app import app
    from kvplan.engines.runtime import device_total
    from kvplan.inputs import presets

    out = CliRunner().invoke(app, ["gpus", "--format", "json"])
    assert out.exit_code == 0, out.output
    shown = {row["id"]: row["device_total_bytes"] for row in json.loads(out.output)}
    gpus = presets.all_gpus()
    assert len(shown) == len({g.id for g in gpus}) > 10
    for g in gpus:
        assert shown[g.id] == device_total(g)[0], g.id


def test_device_total_hand_derived():
    from kvplan.engines.runtime import device_total
    from kvplan.views.listing import gpu_rows

    class _Gpu:
        def __init__(self, mib: int, cuda: int | None) -> None:
            self.id = self.name = "x"
            self.memory_mib, self.cuda_total_bytes, self.interconnect = mib, cuda, "pcie"
            self.sm, self.fp8, self.fp4 = "9.0", True, False

    class _Entry:
        def __init__(self, g: _Gpu) -> None:
            self.preset, self.origin = g, "shipped"

    # nvidia-smi only: 97,887 MiB x 1,048,576 = 102,641,958,912 B, less 0.57 GiB (612,032,839 B) = 102,029,926,073
    assert device_total(_Gpu(97_887, None)) == (102_029_926_073, False)
    assert device_total(_Gpu(81_559, 85_024_246_333)) == (85_024_246_333, True)
    rows = gpu_rows([_Entry(_Gpu(97_887, None)), _Entry(_Gpu(81_559, 85_024_246_333))])
    assert [r["device_total_bytes"] for r in rows] == [102_029_926_073, 85_024_246_333]
    assert [r["cuda_total_gib"] for r in rows] == [None, 79.18]  # 85,024,246,333 / 2**30 = 79.184


# ---------------------------------------------------------------------------------------------------------------
# The derived request cap's note: structured for the views (kind + values), plain text in JSON
# ---------------------------------------------------------------------------------------------------------------


def test_derived_request_cap_note_carries_its_values():
    import copy
    import json
    import pickle

    from kvplan.engines.base import Note, NoteKind
    from kvplan.engines.sglang.rules import REQUEST_CAP_CEILING, REQUEST_CAP_FLOOR, resolve_max_running_requests
    from kvplan.views.serialize import to_json

    r = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768))
    notes = [a for a in r.assumptions if isinstance(a, Note) and a.kind is NoteKind.DERIVED_REQUEST_CAP]
    assert len(notes) == 1
    cap, lo, hi = notes[0].values
    assert (lo, hi) == (REQUEST_CAP_FLOOR, REQUEST_CAP_CEILING) == (2048, 4096)
    assert (
        cap
        == r.max_running_requests
        == resolve_max_running_requests(
            total_tokens=r.kv_pool_tokens, context_len=32768, requested=None, attn_dp_size=1
        )
    )
    assert str(notes[0]).startswith(f"max_running_requests {cap}: SGLang's derived default clamp(")
    # JSON shows the text alone; copies and pickles keep the structure
    assert str(notes[0]) in json.loads(to_json(r))["assumptions"]
    for twin in (copy.deepcopy(notes[0]), pickle.loads(pickle.dumps(notes[0]))):
        assert twin == notes[0] and twin.kind is NoteKind.DERIVED_REQUEST_CAP and twin.values == (cap, lo, hi)


# ---------------------------------------------------------------------------------------------------------------
# vLLM's hybrid block alignment (Platform._align_hybrid_block_size): one function, fit and show call it
# ---------------------------------------------------------------------------------------------------------------


def test_hybrid_alignment_is_written_once():
    assert _modules_with("Padding mamba page size by") == ["engines/vllm/grouping.py"]
    for mod in ("engines/vllm/planner.py", "planning/show.py"):
        text = (PKG / mod).read_text(encoding="utf-8")
        assert "align_hybrid_pages(" in text and "replace(x, state_bytes=" not in text, mod


def test_align_hybrid_pages_hand_derived():
    from kvplan.engines.vllm.grouping import HybridAlignment, align_hybrid_pages
    from kvplan.engines.vllm.specs import LayerKV, ModelKV
    from kvplan.family import Family

    # Qwen3-Next-like at TP2 bf16: attention 1,024 B/token per layer, one GDN state page of 548,864 B, block 16.
    layers = (
        LayerKV("l0.attn", "full", 0, token_bytes=1024),
        LayerKV("l1.gdn", "mamba", 1, state_bytes=548_864),
        LayerKV("l2.gdn", "mamba", 2, state_bytes=500_000),
    )
    model = ModelKV(layers, 3, Family.HYBRID_MAMBA, 1024)
    warnings: list[str] = []
    out, block = align_hybrid_pages(model, block_size=16, warnings=warnings, align=HybridAlignment(16, 16))
    # 16 x cdiv(548,864, 16 x 1,024) = 16 x cdiv(548,864, 16,384) = 16 x 34 = 544 tokens; page 544 x 1,024 = 557,056
    assert block == 544
    assert [x.state_bytes for x in out.layers if x.kind == "mamba"] == [557_056, 557_056]
    assert out.layers[0] == layers[0]
    # padding (557,056 - 548,864) / 548,864 = 8,192 / 548,864 = 1.49%
    assert warnings == [
        "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
        "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
    ]
    # MLA hybrids (>= 0.27): the alignment is at least 128 -> 128 x cdiv(548,864, 131,072) = 128 x 5 = 640
    _, mla_block = align_hybrid_pages(model, block_size=16, warnings=[], align=HybridAlignment(16, 16, mla=True))
    assert mla_block == 640
    # no state pages: unchanged
    plain = ModelKV(layers[:1], 1, Family.GQA, 1024)
    assert align_hybrid_pages(plain, block_size=16, warnings=warnings) == (plain, 16)


# ---------------------------------------------------------------------------------------------------------------
# The request-cap clamp: requests at once = min(what the pool holds, the engine's request cap)
# ---------------------------------------------------------------------------------------------------------------


def test_request_cap_clamp_hand_derived():
    import numpy as np

    from kvplan.engines.base import full_context_requests, requests_at_once

    assert requests_at_once(pool_bound=513, request_cap=16) == 16  # 4,732,416 // 9,216 = 513 in the pool, cap 16
    assert requests_at_once(pool_bound=6, request_cap=3529) == 6  # 903,439 // 131,072 = 6, derived cap 3,529
    # 320,398 // 32,768 = 9 (9 x 32,768 = 294,912; 10 x = 327,680 > 320,398)
    assert full_context_requests(pool_tokens=320_398, context_len=32_768, request_cap=4096) == 9
    assert full_context_requests(pool_tokens=320_398, context_len=32_768, request_cap=4) == 4
    assert full_context_requests(pool_tokens=320_398, context_len=0, request_cap=4) == 0
    got = full_context_requests(
        pool_tokens=np.array([320_398, 65_536, 0]), context_len=32_768, request_cap=np.array([4096, 1, 8])
    )
    assert got.tolist() == [9, 1, 0]


def test_fit_concurrency_is_the_clamp():
    from kvplan.engines.base import full_context_requests

    for dep in (
        Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768),
        Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=4096, max_running_requests=8),
    ):
        r = fit(dep)
        want = full_context_requests(
            pool_tokens=r.kv_pool_tokens, context_len=r.context_length, request_cap=r.max_running_requests
        )
        assert r.max_concurrency == want * r.dp
    capped = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=4096, max_running_requests=8))
    assert capped.max_concurrency == 8 < capped.kv_pool_tokens // 4096  # the cap binds, not the pool

"""A family is one row: a throwaway family added through its ``FamilySpec``, by the file list of docs/architecture.md.

The test copies ``kvplan/`` to a scratch directory, writes the new family ("toyfam": one ``toy_rank``-wide row per
token per layer, GQA-like attention layers) into exactly the files the doc's "A new model family" case lists, runs
a script against that copy in a subprocess, and checks that every registry accepts the family: the three detection
readers, the geometry module, SGLang's pool planner (``fit``), its sweep evaluator and first release, vLLM's spec
builder (``fit``) and block rule, the weight inventory, and ``kvplan show``.  The file list is parsed from the doc,
so the doc and the test cannot drift: a registry that needs one more file fails here.

Numbers of the toy model (derived by hand): 4 layers x toy_rank 256 x 2 B (bf16) = 2,048 B per token, on every
attention rank, in both engines.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILY = "toyfam"

TOY_CONFIG = {
    "architectures": ["ToyFamForCausalLM"],
    "model_type": "toyfam",
    "num_hidden_layers": 4,
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 4096,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
    "toy_rank": 256,
}


def _doc_files() -> list[str]:
    """The files docs/architecture.md says a new family needs (the "Files (exactly these" list of its case)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    case = doc.split("### A new model family", 1)[1].split("\n### ", 1)[0]
    block = case.split("Files (exactly these", 1)[1].split("\n\n", 2)[1]
    files = [m.group(1) for m in re.finditer(r"^- `([^`]+)`", block, flags=re.M)]
    assert files, "no file list under 'A new model family' in docs/architecture.md"
    return [f.replace("<family>", FAMILY) for f in files]


def _insert(path: Path, anchor: str, text: str, *, after: bool = True) -> None:
    src = path.read_text()
    assert src.count(anchor) == 1, f"{path.name}: anchor {anchor!r} not found once"
    path.write_text(src.replace(anchor, anchor + text if after else text + anchor))


# What each listed file gets, keyed by its path; a listed file this dict does not know fails the test.
_ENUM_MEMBER = '    TOYFAM = "toyfam"  # throwaway family of tests/test_family_spec.py\n'
_SPEC_ROW = """    FamilySpec(
        family=Family.TOYFAM,
        label="toy rows",
        hybrid=False,
        attention=False,
        detect=(DetectRule(order=5, archs=frozenset({"ToyFamForCausalLM"}), model_types=frozenset({"toyfam"})),),
        geometry="kvplan.geometry.toyfam",
        sglang_pools=f"{_POOLS}.toyfam",
        sglang_sweep=f"{_POOLS}.vector",
        single_cell=True,
        vllm_spec=f"{_SPECS}:build_toyfam",
        vllm_block=BlockDefault(16),
        layer_builder=f"{_LAYERS}:_gqa_layer",
        since=_since(sglang="0.5.20"),
    ),
"""
_GEOMETRY = '''
"""Toy family geometry: one ``toy_rank``-wide row per token per layer."""


def toy_bytes_per_token(*, toy_rank: int, num_layers: int, dtype_bytes: int) -> int:
    """``toy_rank x num_layers x dtype_bytes``.  Example: 256 x 4 x 2 = 2,048."""
    return toy_rank * num_layers * dtype_bytes
'''
_POOL = '''
"""SGLang pool of the toy family: the toy row through the default flow."""

from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolPlan
from kvplan.engines.sglang.pools.default import plan_default
from kvplan.geometry.kvdtype import kv_element_bytes
from kvplan.geometry.toyfam import toy_bytes_per_token


def _cell(ctx: PoolContext, layers: int) -> int:
    rank = ctx.model.require_int("toy_rank")
    return toy_bytes_per_token(toy_rank=rank, num_layers=layers, dtype_bytes=kv_element_bytes(ctx.kv_dtype))


def plan(ctx: PoolContext) -> PoolPlan:
    return plan_default(ctx, cell=_cell, layout=lambda ctx: "toy rows", pool_name="toy rows")


def breakdown(m):
    b = toy_bytes_per_token(toy_rank=m.config["toy_rank"], num_layers=m.num_layers, dtype_bytes=2)
    return Breakdown(info={"toy_rank": m.config["toy_rank"]}, rows=[{"kv_cache_dtype": "bf16", "bytes_per_token": b}])
'''
_VLLM_BUILDER = '''

def build_toyfam(cfg: Mapping[str, Any], ctx: SpecContext) -> ModelKV:
    """Toy family: one ``toy_rank`` row per layer and token, not split by TP."""
    per = req_int(cfg, "toy_rank") * ctx.dtype_bytes
    layers = tuple(LayerKV(f"l{i}.toy", "full", i, token_bytes=per) for i in range(ctx.num_layers))
    return ModelKV(layers, ctx.num_layers, Family.TOYFAM, per)
'''


def _write(pkg: Path, rel: str) -> None:
    path = pkg.parent / rel
    if rel == "kvplan/family.py":
        _insert(path, '    HYBRID_MAMBA = "hybrid_mamba"', "\n" + _ENUM_MEMBER.rstrip("\n"))
        _insert(path, "\n)\n\n#: family -> its :class:`FamilySpec`", _SPEC_ROW, after=False)
    elif rel == f"kvplan/geometry/{FAMILY}.py":
        path.write_text(_GEOMETRY.lstrip())
    elif rel == f"kvplan/engines/sglang/pools/{FAMILY}.py":
        path.write_text(_POOL.lstrip())
    elif rel == "kvplan/engines/vllm/specs.py":
        _insert(path, "\n\ndef _lazy_builder(", _VLLM_BUILDER, after=False)
    else:
        raise AssertionError(f"docs/architecture.md lists {rel}, which this test does not know how to write")


_CHECK = textwrap.dedent(
    """
    import json, sys
    from kvplan.deployment import Deployment
    from kvplan.errors import InputError
    from kvplan.family import FAMILY_SPECS, Family, resolve
    from kvplan.hfconfig.detect import detect_family, vllm_family, weights_family
    from kvplan.hfconfig.normalize import flatten_config

    path, cfg = sys.argv[1], json.loads(open(sys.argv[1]).read())
    fam = Family("toyfam")
    out = {}
    flat = flatten_config(cfg)
    out["detect"] = [detect_family(flat), vllm_family(flatten_config(cfg, engine="vllm")), weights_family(flat)]
    out["geometry"] = resolve(FAMILY_SPECS[fam].geometry).toy_bytes_per_token(toy_rank=256, num_layers=4, dtype_bytes=2)
    out["label"] = fam.label

    from kvplan.engines.sglang.pools import SWEEP_VECTORS, capturing_contexts, vector_group
    from kvplan.planning.plan import fit

    with capturing_contexts() as ctxs:
        s = fit(Deployment(model=path, gpu="h100-sxm", kv_cache_dtype="bf16"))
    out["sglang"] = [s.family, s.kv_bytes_per_token, s.kv_pool_tokens > 0]
    out["sweep"] = [fam in SWEEP_VECTORS, vector_group(fam, ctxs[-1], cell=s.kv_bytes_per_token) is not None]
    try:
        fit(Deployment(model=path, gpu="h100-sxm", engine_version="0.5.19"))
        out["since"] = "accepted"
    except InputError as e:
        out["since"] = str(e)
    from kvplan.engines.sglang.releases import FAMILY_SINCE

    out["family_since"] = FAMILY_SINCE.get(fam)

    v = fit(Deployment(model=path, gpu="h100-sxm", engine="vllm", kv_cache_dtype="bfloat16"))
    out["vllm"] = [v.family, v.kv_bytes_per_token, v.kv_pool_tokens > 0]
    from kvplan.engines.vllm.releases import BLOCK_RULES

    out["block"] = BLOCK_RULES[fam].default
    from kvplan.weights.inventory import inventory

    out["weights"] = inventory(cfg).family
    from kvplan.planning.show import show_rows

    info, rows = show_rows(path, None)
    out["show"] = [info["family"], len(rows)]
    print(json.dumps(out))
    """
)


def test_a_new_family_is_one_row_and_the_files_the_doc_lists(tmp_path):
    files = _doc_files()
    pkg = tmp_path / "kvplan"
    shutil.copytree(ROOT / "kvplan", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*_cache"))
    for rel in files:
        _write(pkg, rel)
    cfg_path = tmp_path / "toy" / "config.json"
    cfg_path.parent.mkdir()
    cfg_path.write_text(json.dumps(TOY_CONFIG))

    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "KVPLAN_CACHE_DIR": str(tmp_path / "cache"),
        "KVPLAN_CONFIGS": str(ROOT / "configs"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK, str(cfg_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    assert out["detect"] == [FAMILY, FAMILY, FAMILY]  # SGLang's, vLLM's and the weights' readers
    assert out["geometry"] == 2048 and out["label"] == "toy rows"
    assert out["sglang"] == [FAMILY, 2048, True]  # 256 x 4 layers x 2 B
    assert out["sweep"] == [True, True]  # the single-cell sweep formula takes it
    assert "0.5.20" in out["since"] and out["family_since"] == "0.5.20"
    assert out["vllm"] == [FAMILY, 2048, True]
    assert out["block"] == 16
    assert out["weights"] == FAMILY
    assert out["show"][0] == FAMILY and out["show"][1] >= 1

    # exactly the listed files differ from the package (nothing else was needed)
    changed = set()
    for p in pkg.rglob("*.py"):
        rel = p.relative_to(tmp_path).as_posix()
        orig = ROOT / rel
        if "__pycache__" not in rel and (not orig.is_file() or not filecmp.cmp(p, orig, shallow=False)):
            changed.add(rel)
    assert changed == set(files)


def test_the_registries_derived_from_the_rows_are_what_they_were():
    """The rows reproduce the registries they replaced (values as they were written out before issue 21)."""
    from kvplan.engines.sglang.pools import POOL_PLANNERS, SWEEP_VECTORS, VECTOR_FAMILIES
    from kvplan.engines.vllm import grouping, specs
    from kvplan.family import ATTENTION_FAMILIES, FAMILY_SPECS, Family, family_since, resolve
    from kvplan.hfconfig.layer_kinds import STATE_KINDS

    assert set(POOL_PLANNERS) == set(Family) == set(specs.SPEC_BUILDERS)
    assert {f for f, p in POOL_PLANNERS.items() if p.supports_dcp} == {Family.GQA, Family.MLA, Family.DSA}
    assert {Family.GQA, Family.MLA, Family.DSA} == VECTOR_FAMILIES
    pools = "kvplan.engines.sglang.pools."
    assert {f: m.removeprefix(pools) for f, m in SWEEP_VECTORS.items()} == {
        Family.GQA: "vector",
        Family.MLA: "vector",
        Family.DSA: "vector",
        Family.HYBRID_SWA: "swa",
        Family.HYBRID_MAMBA: "mamba",
        Family.DSV4: "dsv4",
    }
    assert set(grouping.GROUPERS) == {Family.DSV4}
    assert dict(family_since("sglang")) == {
        Family.GQA: "0.3.0",
        Family.MLA: "0.3.0",
        Family.HYBRID_SWA: "0.4.9.post6",
        Family.HYBRID_MAMBA: "0.5.2",
        Family.DSA: "0.5.3",
        Family.DSV4: "0.5.12",
    }
    assert ATTENTION_FAMILIES == (Family.GQA, Family.MLA, Family.DSA, Family.DSV4)
    assert {f for f in Family if f.is_hybrid} == {Family.HYBRID_SWA, Family.HYBRID_MAMBA}
    # SGLang's first-match order: DSV4, MLA+SWA (Dots3), DSA, the Mamba hybrids, MLA, SWA
    rules = sorted((r.order, r.predicate) for s in FAMILY_SPECS.values() for r in s.detect)
    assert [p for _, p in rules] == ["dsv4_rule", "mla_swa_rule", "dsa_rule", "mamba_rule", "mla_rule", "swa_rule"]
    assert set(specs._STATE_BYTES) == STATE_KINDS
    for s in FAMILY_SPECS.values():  # every dotted string of a row names real code
        for path in (s.geometry, s.sglang_pools, s.sglang_sweep, s.vllm_spec, s.vllm_grouper, s.layer_builder):
            assert path is None or resolve(path) is not None, path

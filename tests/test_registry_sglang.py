"""The SGLang pool-planner registry and the release-keyed rule sets (issue 10).

* every Family SGLang plans has one planner, keyed by its own family; the sweep's vectorised families are among them;
* ``kvplan fit`` and ``kvplan show`` go through the same planner (patched in the registry, both see the patch) and
  agree on the bytes per token;
* a family with no planner is the InputError it always was;
* ``rules_for`` picks a release window's rule set, an unknown release gets the default set and the same warning,
  and ``plan_sglang`` reads its rules only through the set.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang import releases
from kvplan.engines.sglang.pools import POOL_PLANNERS, VECTOR_FAMILIES, PoolPlanner
from kvplan.errors import InputError
from kvplan.family import Family, family_or_none
from kvplan.planning.plan import fit
from kvplan.planning.show import show_rows
from kvplan.version import Version

# one preset model per family
MODELS = {
    Family.GQA: "meta-llama/Llama-3.1-8B",
    Family.MLA: "deepseek-ai/DeepSeek-V3",
    Family.DSA: "deepseek-ai/DeepSeek-V3.2",
    Family.DSV4: "deepseek-ai/DeepSeek-V4-Flash",
    Family.HYBRID_SWA: "openai/gpt-oss-120b",
    Family.HYBRID_MAMBA: "Qwen/Qwen3-Next-80B-A3B-Instruct",
}


def test_registry_covers_every_family():
    assert set(POOL_PLANNERS) == set(Family)
    for fam, planner in POOL_PLANNERS.items():
        assert planner.family is fam
    assert set(POOL_PLANNERS) >= VECTOR_FAMILIES
    assert {Family.GQA, Family.MLA, Family.DSA} == VECTOR_FAMILIES


def test_every_preset_family_has_a_planner():
    out = subprocess.run(
        [sys.executable, "-m", "kvplan", "models", "--format", "json"], capture_output=True, text=True, check=True
    ).stdout
    families = {m["family"] for m in json.loads(out)}
    assert families and all(family_or_none(f) in POOL_PLANNERS for f in families)


@pytest.mark.parametrize("fam", sorted(MODELS), ids=str)
def test_vector_families_have_one_cell_and_no_fixed_pool(fam):
    res = fit(Deployment(model=MODELS[fam], gpu="h200-sxm", tp=8))
    assert res.family == fam
    if fam in VECTOR_FAMILIES:
        assert res.fixed_pool_bytes == 0 and len(res.pools) == 1
        assert res.kv_pool_bytes == res.kv_pool_tokens * res.kv_bytes_per_token


@pytest.mark.parametrize("fam", sorted(MODELS), ids=str)
def test_fit_and_show_use_the_same_planner(fam, monkeypatch):
    calls: list[str] = []
    real = POOL_PLANNERS[fam]

    def plan(ctx):
        calls.append("plan")
        return real.plan(ctx)

    def breakdown(model):
        calls.append("breakdown")
        return real.breakdown(model)

    monkeypatch.setitem(POOL_PLANNERS, fam, dataclasses.replace(real, plan=plan, breakdown=breakdown))
    fit(Deployment(model=MODELS[fam], gpu="h200-sxm", tp=8))
    show_rows(MODELS[fam], None)
    assert calls == ["plan", "breakdown"]


def test_show_and_fit_agree_on_the_cell():
    gqa = fit(Deployment(model=MODELS[Family.GQA], gpu="h100-sxm", tp=1))
    _, rows = show_rows(MODELS[Family.GQA], None)
    assert {(r["kv_cache_dtype"], r["tp"]): r["bytes_per_token"] for r in rows}[("bf16", 1)] == gqa.kv_bytes_per_token
    mla = fit(Deployment(model=MODELS[Family.MLA], gpu="h200-sxm", tp=8, kv_cache_dtype="fp8_e4m3"))
    _, rows = show_rows(MODELS[Family.MLA], None)
    assert {r["kv_cache_dtype"]: r["bytes_per_token"] for r in rows}["fp8_e4m3"] == mla.kv_bytes_per_token
    dsa = fit(Deployment(model=MODELS[Family.DSA], gpu="b200", tp=8))  # SM100 default: raw fp8 rows
    _, rows = show_rows(MODELS[Family.DSA], None)
    assert {r["layout"]: r["bytes_per_token"] for r in rows}["raw_fp8"] == dsa.kv_bytes_per_token


def test_a_family_without_a_planner_is_an_input_error(monkeypatch):
    monkeypatch.delitem(POOL_PLANNERS, Family.GQA)
    with pytest.raises(InputError) as err:
        fit(Deployment(model=MODELS[Family.GQA], gpu="h100-sxm"))
    assert err.value.field == "--model"
    assert "is a gqa model, which kvplan does not size yet" in str(err.value)
    info, rows = show_rows(MODELS[Family.GQA], None)
    assert rows == [] and "not yet available" in info["note"]
    # decode context parallel needs a planner that models it
    monkeypatch.setitem(POOL_PLANNERS, Family.MLA, dataclasses.replace(POOL_PLANNERS[Family.MLA], supports_dcp=False))
    with pytest.raises(InputError) as err:
        fit(Deployment(model=MODELS[Family.MLA], gpu="h200-sxm", tp=8, dcp_size=2))
    assert err.value.field == "--dcp-size"


def test_planner_type():
    assert all(isinstance(p, PoolPlanner) for p in POOL_PLANNERS.values())
    assert {f for f, p in POOL_PLANNERS.items() if p.supports_dcp} == {Family.GQA, Family.MLA, Family.DSA}


# ---------------------------------------------------------------- releases


def test_rules_for_the_default_release():
    assert releases.rules_for(None) is releases.DEFAULT_RULES
    assert releases.rules_for("0.5.23") is releases.rules_for("v0.5.23") is releases.DEFAULT_RULES
    assert releases.DEFAULT_RULES.release == "0.5.23"
    assert releases.release_warning(None) is None
    assert releases.release_warning("0.5.23") is None and releases.release_warning("v0.5.23") is None


@pytest.mark.parametrize(
    ("version", "window"), [("0.5.20", "0.5.20"), ("0.5.23.post1", "0.5.23"), ("0.4.6.post1", "0.4.6")]
)
def test_a_release_in_the_range_gets_its_own_window_and_no_warning(version, window):
    # issue 12: every release 0.3.0-0.5.23 gets the rules of its window (named by its first release; was: 0.5.23's rules + a warning)
    assert releases.rules_for(version).release == window
    assert releases.release_warning(version) is None


@pytest.mark.parametrize("version", ["nightly", "00.5.23", "9.9", "0.2.0"])
def test_a_release_kvplan_cannot_read_is_exit_2_naming_the_range(version):
    with pytest.raises(InputError) as e:
        releases.rules_for(version)
    assert e.value.field == "--engine-version" and "0.3.0" in str(e.value) and "0.5.23" in str(e.value)


def test_read_release_and_window():
    assert releases.read_release("0.5.23").key == Version.of("0.5.23") == releases.read_release("v0.5.23").key
    assert releases.read_release("0.5.10.post1").release == "0.5.10.post1"
    with pytest.raises(InputError):
        releases.read_release("")
    w = releases.ReleaseWindow(first="0.5.3", last="0.5.19", rules=releases.DEFAULT_RULES)
    assert w.covers("0.5.3") and w.covers("0.5.10") and w.covers("0.5.19")
    assert not w.covers("0.5.2") and not w.covers("0.5.20")
    assert w.covers("0.5.10.post1")  # a .postN build belongs to its release's window (issue 12)


def test_overrides_are_data():
    o = releases.DEFAULT_RULES.override(Family.DSV4)
    assert o is not None and (o.page_size, o.max_running_requests, o.prefill_cuda_graph) == (256, 256, False)
    assert releases.DEFAULT_RULES.override(Family.GQA) is None
    assert releases.DEFAULT_RULES.mla_families == {Family.MLA, Family.DSA}


def test_plan_reads_rules_through_the_rule_set(monkeypatch):
    """A second window side by side: a deployment of that release gets that window's rules and no warning."""
    other = dataclasses.replace(releases.DEFAULT_RULES, release="0.5.22", default_chunked_prefill_size=lambda **_: 1234)
    monkeypatch.setattr(
        releases, "RELEASES", (*releases.RELEASES, releases.ReleaseWindow(first="0.5.20", last="0.5.22", rules=other))
    )
    assert releases.rules_for("0.5.21") is other
    res = fit(Deployment(model=MODELS[Family.GQA], gpu="h100-sxm", engine_version="0.5.21"))
    assert res.chunked_prefill_size == 1234
    assert not any("may size some layouts differently" in w for w in res.warnings)
    default = fit(Deployment(model=MODELS[Family.GQA], gpu="h100-sxm"))
    assert default.chunked_prefill_size == 8192


def test_family_or_none():
    assert family_or_none("dsa") is Family.DSA
    assert family_or_none(Family.GQA) is Family.GQA
    assert family_or_none("rwkv") is None and family_or_none(None) is None

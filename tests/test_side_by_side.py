"""Engines side by side (``kvplan fit --engine sglang,vllm``, issue 24 item 6): one JSON object per engine, in the
order given, each saying which memory knob it reads and where that knob's value came from."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.planning.plan import fit, knob_source

ARGS = ["fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "2", "--context-length", "32k"]


def _json(*extra: str) -> list[dict]:
    res = CliRunner().invoke(app, [*ARGS, "--engine", "sglang,vllm", *extra, "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert isinstance(out, list)
    return out


def test_one_object_per_engine_in_the_order_given():
    both = _json()
    assert [d["engine"] for d in both] == ["sglang", "vllm"]
    for d in both:  # each object is the engine's own fit answer
        alone = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768, engine=d["engine"]))
        assert (d["kv_pool_tokens"], d["fits"], d["starts"]) == (alone.kv_pool_tokens, alone.fits, alone.starts)


def test_each_engine_names_its_knob_and_where_it_came_from():
    sg, vl = _json()
    assert (sg["memory_knob"], sg["memory_knob_source"]) == ("mem_fraction_static", "engine default")
    assert (vl["memory_knob"], vl["memory_knob_source"]) == ("gpu_memory_utilization", "engine default")
    sg, vl = _json("--mem-fraction-static", "0.8")
    assert (sg["memory_knob_source"], sg["mem_fraction_static"]) == ("given", 0.8)
    # vLLM does not read SGLang's knob: its own stays the engine's default, and the flag is listed as ignored
    assert vl["memory_knob_source"] == "engine default" and vl["ignored_flags"] == ["--mem-fraction-static"]


def test_knob_source_of_the_default_deployment():
    assert knob_source(Deployment(), Deployment().with_defaults()) == ("mem_fraction_static", "default deployment")
    dep = Deployment(model="Qwen/Qwen3-32B", engine="vllm", gpu_memory_utilization=0.9)
    assert knob_source(dep, dep.with_defaults()) == ("gpu_memory_utilization", "given")


def test_the_table_puts_the_verdicts_first_and_says_where_each_knob_came_from():
    from kvplan.views import render
    from kvplan.views.console import fixed_console, recorded_text

    dep = Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768, mem_fraction_static=0.8)
    rs = [fit(dep), fit(Deployment(**{**dep.__dict__, "engine": "vllm"}))]
    con = fixed_console(120)
    render.compare_table(rs, console=con)
    out = recorded_text(con)
    lines = out.splitlines()
    table = next(i for i, line in enumerate(lines) if line.strip().startswith("per GPU"))
    assert lines[1].startswith("SGLang: fits") and any(x.startswith("vLLM: ") for x in lines[2:table])
    row = {line.split()[0]: line.split()[1:] for line in lines[table + 2 :] if line.strip()}
    assert row["mem_fraction_static"] == ["0.8", "(given)", "-"]
    assert row["gpu_memory_utilization"][0] == "-" and row["gpu_memory_utilization"][-1] == "(default)"
    text = " ".join(out.split())
    assert "KV bytes per token, SGLang: one max_total_num_tokens token" in text
    assert "KV bytes per token, vLLM: one token of this GPU's attention layers" in text


def test_the_table_shows_each_engines_cold_band_and_a_dash_when_measured():
    """The band row carries each engine's own ``kv_pool_band_percent`` (cold), and "-" where the answer is measured."""
    sg, vl = _json()
    res = CliRunner().invoke(app, [*ARGS, "--engine", "sglang,vllm", "--format", "table"])
    assert res.exit_code == 0, res.output
    row = next(line for line in res.stdout.splitlines() if line.strip().startswith("KV pool band"))
    assert row.split()[3:] == [f"±{sg['kv_pool_band_percent']}%", "(cold)", f"±{vl['kv_pool_band_percent']}%", "(cold)"]
    measured = ["--free-memory", "78.81GiB", "--weight-memory", "15.09GiB"]
    res = CliRunner().invoke(app, [*ARGS, "--engine", "sglang,vllm", *measured, "--format", "table"])
    assert res.exit_code == 0, res.output
    row = next(line for line in res.stdout.splitlines() if line.strip().startswith("KV pool band"))
    assert row.split()[3:] == ["-", "-"], row

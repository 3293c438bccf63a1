"""Issue 26 item 3, sweeps: ranges computed without float overflow, and groups the engine refuses found before any
planning (a sweep's cost follows its points, not its groups).  Work bounds (values made, ``fit`` calls), no timing."""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

import kvplan.planning.plan as plan_mod
from kvplan.cli import app as cli_app
from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.sweep import MAX_AXIS_VALUES, parse_axis, sweep
from kvplan.planning.sweep import groups as groups_mod
from kvplan.planning.sweep.groups import REPRESENTATIVE_TRIES, head_split_refusal

runner = CliRunner()


# ------------------------------------------------------------------------------------------------ ranges


@pytest.mark.parametrize(
    "text",
    ["0.5:0.9:5e-324", "0.1:0.9:1e-320", "0.1:0.9:1e-300", "0.1:0.9:1e-13", "0.5:0.9:1e-17"],
)
def test_a_step_below_the_resolution_is_one_short_input_error(text):
    with pytest.raises(InputError) as err:
        parse_axis(text, field="mem_fraction_static")
    line = err.value.one_line()
    assert "below the resolution of the range" in line
    assert "--mem-fraction-static" in line
    assert len(line) < 220 and not any(len(w) > 40 for w in line.split())  # no 300-digit count


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("mem_fraction_static", "0.1:0.9:1e-10"),  # 8e9 values: counted, not made
        ("context_length", "1:9999999999999999999999999999999999999"),  # a 37-digit count
        ("tp", "1:9999999999999999999999999999999999999"),
        ("context_length", "1:9999999999999999999999999999999999999:x1.00000001"),  # a factor near 1
    ],
)
def test_huge_ranges_are_refused_before_values_are_made(field, text, monkeypatch):
    made = []
    real_range = range

    def counting_range(*a):  # the int path makes its values with range(): never called for a refused range
        made.append(a)
        return real_range(*a)

    monkeypatch.setattr("builtins.range", counting_range)
    with pytest.raises(InputError) as err:
        parse_axis(text, field=field)
    monkeypatch.undo()
    line = err.value.one_line()
    assert f"{MAX_AXIS_VALUES:,}" in line
    assert not any(len(w.strip("',;()")) > 20 for w in line.split() if w[0].isdigit())
    assert not made


def test_ranges_that_fit_are_unchanged():
    assert parse_axis("0.70:0.95:0.05", field="mem_fraction_static") == [0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    assert parse_axis("4k:32k:x2", field="context_length") == [4096, 8192, 16384, 32768]
    assert parse_axis("1:8", field="tp") == list(range(1, 9))
    assert parse_axis("0.5:0.5:1e-300", field="mem_fraction_static") == [0.5]  # one value: no step taken
    assert len(parse_axis("0.1:0.2:1e-6", field="mem_fraction_static")) == 100_001


def test_subnormal_step_cli_exit_2_one_line():
    args = ["sweep", "-m", "meta-llama/Llama-3.1-8B", "-g", "h100-sxm", "--format", "csv", "--mem-fraction-static"]
    r = runner.invoke(cli_app.app, [*args, "0.5:0.9:5e-324"])
    assert r.exit_code == 2, r.output
    assert "below the resolution" in r.output and "internal error" not in r.output
    r = runner.invoke(cli_app.app, [*args, "0.1:0.9:1e-300"])
    assert r.exit_code == 2 and len(r.output) < 300


# ------------------------------------------------------------------------------------------------ refused groups


@pytest.mark.parametrize("engine_name", ["sglang", "vllm"])
def test_the_cheap_check_says_what_fit_says(engine_name):
    for tp in (3, 5, 6, 7, 12, 48, 96, 100, 256):
        exc = head_split_refusal(engine_name=engine_name, heads=128, tp=tp, attn_dp=1)
        assert exc is not None
        with pytest.raises(InputError) as err:
            plan_mod.fit(Deployment(model="deepseek-ai/DeepSeek-V3", gpu="h200", engine=engine_name, tp=tp))
        assert err.value.one_line() == exc.one_line()
    for tp in (1, 2, 8, 16, 128):
        assert head_split_refusal(engine_name=engine_name, heads=128, tp=tp, attn_dp=1) is None
    assert head_split_refusal(engine_name=engine_name, heads=True, tp=3, attn_dp=1) is None


def _counting(monkeypatch):
    calls = []
    real = plan_mod.fit

    def fit(dep, **kw):
        calls.append(dep.tp)
        return real(dep, **kw)

    monkeypatch.setattr(plan_mod, "fit", fit)
    return calls


def _csv(table) -> str:
    buf = io.StringIO()
    table.write_csv(buf)
    return buf.getvalue()


@pytest.mark.parametrize("engine_name", ["sglang", "vllm"])
def test_refused_groups_cost_no_plan_calls(engine_name, monkeypatch):
    """DeepSeek-V3 (128 heads) over --tp 1:160 with a context axis: 152 of 160 TP values refused.  Before, each
    refused group cost one fit and REPRESENTATIVE_TRIES more; now the plan calls follow the valid groups."""
    base = Deployment(model="deepseek-ai/DeepSeek-V3", gpu="h200", engine=engine_name)
    axes = {"tp": list(range(1, 161)), "context_length": [4096, 32768, 131072]}
    valid = [tp for tp in axes["tp"] if 128 % tp == 0]
    calls = _counting(monkeypatch)
    table = sweep(base, axes)
    with_check = _csv(table)
    refused_calls = [tp for tp in calls if 128 % tp]
    assert len(refused_calls) <= 1  # the one fit that confirms the cheap check's words for the model / engine
    assert len(calls) <= len(valid) * (REPRESENTATIVE_TRIES + 2) + 1

    # the same rows as the planning path: the cheap check switched off
    monkeypatch.setattr(groups_mod._CHEAP, "refusal", lambda *a: None)
    calls.clear()
    without = _csv(sweep(base, dict(axes)))
    assert with_check == without
    assert len([tp for tp in calls if 128 % tp]) == 152 * 3  # what it cost before: each of the 3 points tried


def test_an_untrusted_cheap_check_falls_back_to_fit(monkeypatch):
    """When fit's first words for the class differ (here: a check that lies), the cheap check is not trusted."""
    real = head_split_refusal

    def lying(**kw):
        exc = real(**kw)
        return InputError("something else", field="--tp-size") if exc is not None else None

    monkeypatch.setattr(groups_mod, "head_split_refusal", lying)
    base = Deployment(model="deepseek-ai/DeepSeek-V3", gpu="h200")
    text = _csv(sweep(base, {"tp": [3, 5, 8]}))
    assert "something else" not in text and "cannot be split over attention-TP 5" in text


def test_dp_attention_split():
    exc = head_split_refusal(engine_name="sglang", heads=128, tp=24, attn_dp=8)  # attention-TP 3
    assert exc is not None and "attention-TP 3" in exc.one_line()
    assert head_split_refusal(engine_name="sglang", heads=128, tp=16, attn_dp=8) is None

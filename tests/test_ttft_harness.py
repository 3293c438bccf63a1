"""scripts/speed_accuracy.py runs a row as its benchmark harness ran it (HARNESSES): the aiconfigurator rows as
InferenceX's 10 x C requests at --random-range-ratio 0.8 compared with the mean TTFT; the other rows in the steady
state.  By hand from the rows' own fields."""

from __future__ import annotations

from tests.test_speed_validation import _script  # scripts/speed_accuracy.py, loaded as a module


def _row(tool: str, concurrency: int, num_prompts: int | None = None) -> dict:
    return {"workload": {"tool": tool, "num_prompts": num_prompts}, "fixture": {"concurrency": concurrency}}


def test_inferencex_rows_run_ten_requests_per_slot():
    """C = 8: 80 requests, lengths over [0.8 L, L], the mean TTFT (``ttft_s``)."""
    h = _script().harness(_row("InferenceX / AIC collection harness (not stated per row)", 8))
    assert h == {"num_prompts": 80, "range_ratio": 0.8, "ttft": "ttft_s"}


def test_other_rows_stay_in_the_steady_state():
    m = _script()
    assert m.harness(_row("sglang.bench_serving --dataset-name random --random-input-len 8192", 16, 32)) is None
    assert m.harness(_row("live client path through the SSH tunnel, production config", 1)) is None


def test_the_run_flags_reach_the_command_line():
    """A harness adds --num-prompts and --random-range-ratio after the workload flags; none without one."""
    m = _script()
    f = {"engine": "vllm", "model": "m", "gpu": "h100-sxm", "input_len": 1024, "output_len": 128, "concurrency": 8}
    args = m.fixture_args(f, {"num_prompts": 80, "range_ratio": 0.8, "ttft": "ttft_s"})
    assert args[-4:] == ["--num-prompts", "80", "--random-range-ratio", "0.8"]
    assert "--num-prompts" not in m.fixture_args(f)


def test_cookbook_rows_as_their_published_client_only_on_request():
    """--cookbook-run (COOKBOOK_CLIENT): the DeepSeek-V4 cells' own num_prompts (32 at C = 16), bench_serving's
    default ratio 0.0 where the command passes none, 1.0 where the cell states it (Qwen3.6), the mean TTFT; by
    default (and for a row without a run size) the steady state."""
    m = _script()
    v4 = _row("sglang.bench_serving --dataset-name random --random-input-len 8192 --random-output-len 1024", 16, 32)
    assert m.harness(v4) is None
    assert m.harness(v4, cookbook=True) == {"num_prompts": 32, "range_ratio": 0.0, "ttft": "ttft_s"}
    qwen = _row("sglang.bench_serving random, range ratio 1.0", 16, 64)
    assert m.harness(qwen, cookbook=True) == {"num_prompts": 64, "range_ratio": 1.0, "ttft": "ttft_s"}
    assert m.harness(_row("sglang.bench_serving random", 16, None), cookbook=True) is None
    assert m.harness(_row("live client path through the SSH tunnel, production config", 1), cookbook=True) is None

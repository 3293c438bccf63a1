"""speed() says when no request of the workload runs (a prompt longer than the context): before, the step model's
numbers came back with no warning because a workload concurrency of 0 fell back to the max_running_requests cap."""

from __future__ import annotations

from kvplan.deployment import Deployment
from kvplan.planning.speed import speed

QWEN = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, output_len=256)


def test_a_prompt_longer_than_the_context_warns():
    # Qwen3-32B holds 40,960 positions: 131,072 + 256 tokens is no request it runs
    from dataclasses import replace

    r = speed(replace(QWEN, input_len=131072))
    assert any(w.startswith("no request of 131,072+256 tokens runs") for w in r.warnings)
    ok = speed(replace(QWEN, input_len=8192))
    assert not any("no request of" in w for w in ok.warnings)

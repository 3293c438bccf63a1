"""Issue 26: the fuzz run's six exit-1 cases, one cause: a config that kvplan sizes as MLA (a positive
``kv_lora_rank``) without ``qk_rope_head_dim`` was a KeyError in SGLang's MLA breakdown behind ``kvplan show``.

Each seed of scripts/fuzz_run.py that found it is replayed here (the "config" generator is the run's first parser,
so its seeds are the generator's own), plus a hand-made DeepSeek-V3 config without the field through ``show`` and
``fit`` under both engines: exit 2, one line, naming the missing field.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.test_fuzz_hostile import GENERATORS, run_case

ROOT = Path(__file__).resolve().parents[1]
DSV3 = ROOT / "tests/data/shared/hf-configs/deepseek-ai--DeepSeek-V3/config.json"

#: the seeds of ``python scripts/fuzz_run.py --n 10000`` that exited 1 (issue 26, last session)
SEEDS = (170, 515, 831, 1083, 1196, 1410)


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_seed_mla_without_rope_dim_is_input_error(seed, tmp_path):
    case = GENERATORS["config"](random.Random(seed))
    cfg = json.loads(case.files["m/config.json"])
    assert cfg.get("kv_lora_rank") and "qk_rope_head_dim" not in cfg  # still the case the run found
    out = run_case(case, tmp_path)
    assert out.exit_code == 2, (out.exit_code, out.stderr[:300])
    assert not out.problems, out.problems
    assert len(out.stderr.strip().splitlines()) == 1
    assert "qk_rope_head_dim" in out.stderr or "qk_nope_head_dim" in out.stderr


def _run(args: list[str]):
    from kvplan.cli.app import app

    return CliRunner().invoke(app, args, env={"KVPLAN_HUB_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize(
    "args",
    [
        ["show", "{m}"],
        ["show", "{m}", "--format", "json"],
        ["fit", "-m", "{m}", "-g", "h100-sxm", "--tp", "8"],
        ["fit", "-m", "{m}", "-g", "h100-sxm", "--tp", "8", "--engine", "vllm"],
    ],
)
def test_deepseek_v3_without_rope_dim_names_the_field(args, tmp_path):
    cfg = json.loads(DSV3.read_text())
    del cfg["qk_rope_head_dim"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = _run([a.replace("{m}", str(tmp_path)) for a in args])
    assert r.exit_code == 2, (r.exit_code, r.stderr[:300])
    assert len(r.stderr.strip().splitlines()) == 1
    assert "qk_rope_head_dim" in r.stderr


def test_complete_deepseek_v3_still_shows(tmp_path):
    """The guard refuses only what is missing: the verbatim config shows its latent row, (512 + 64) x 61 x 2 B."""
    (tmp_path / "config.json").write_text(DSV3.read_text())
    r = _run(["show", str(tmp_path), "--format", "json"])
    assert r.exit_code == 0, r.stderr[:300]
    assert str((512 + 64) * 61 * 2) in r.stdout

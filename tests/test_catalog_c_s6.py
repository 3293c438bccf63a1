"""Issue 25 item 7 (this year's models in the catalog), helper catalog-c: the presets added for the Chinese and
other non-Western labs' models, each written by the catalog scripts from a public verbatim copy of its config.json.

Each one names that copy (repository, 40-hex commit, path), loads strictly, is not also a [[variants]] entry of
another preset (one id, one place), and plans under both engines on one GPU class that holds its weights, at a
context no longer than its config's max_position_embeddings.  The KV bytes per token of each plan are checked against
the hand count from the config (layers x KV heads per GPU x head_dim x 2 (K and V) x 2 B for bf16).
"""

from __future__ import annotations

import re

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit

#: file stem -> (GPU id, TP, context in tokens, KV bytes per token per GPU counted by hand from the config)
NEW_PRESETS: dict[str, tuple[str, int, int, int]] = {
    # ai-dynamo/aiconfigurator model_configs: 60 layers, 4 KV heads of 128; at TP 8 each GPU holds one (replicated)
    # head: 60 x 1 x 128 x 2 x 2 = 30,720
    "MiniMaxAI--MiniMax-M3": ("h200-sxm", 8, 32_768, 30_720),
    # mlc-ai/mlc-llm MODEL_PRESETS['deepseek']: DeepSeekMoE (MHA), 28 layers x 16 heads x 128 x 2 x 2 = 229,376;
    # its config has 4,096 positions
    "deepseek-ai--deepseek-moe-16b-base": ("l40s", 1, 4_096, 229_376),
    # mlc-ai/mlc-llm MODEL_PRESETS['internlm2_5_7b']: 32 layers x 8 KV heads x 128 x 2 x 2 = 131,072
    "internlm--internlm2_5-7b": ("l40s", 1, 32_768, 131_072),
}

ENGINES = ("sglang", "vllm")

#: "github.com/ORG/REPO @<40 hex> <path>" as the catalog scripts' source line names the copy
_SOURCE = re.compile(r"github\.com/[\w.-]+/[\w.-]+ @([0-9a-f]{40}) \S+")


def _preset(stem: str) -> p.ModelPreset:
    path = p.configs_dir() / "models" / f"{stem}.toml"
    assert path.is_file(), f"{path.name} is missing"
    return p.load_model_file(path, use_cache=False)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    assert _SOURCE.search(m.source), f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    assert "verbatim" in m.source
    assert m.config.get("num_hidden_layers")


def test_new_ids_are_not_also_variants_of_another_preset():
    new = {_preset(s).id for s in NEW_PRESETS}
    variants = {v.id for m in p.all_models() for v in m.variants}
    assert not new & variants


_CASES = [(s, e) for s in sorted(NEW_PRESETS) for e in ENGINES]


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=[f"{s}-{e}" for s, e in _CASES])
def test_preset_plans_with_the_hand_counted_kv_bytes(stem: str, engine: str):
    gpu, tp, context, kv_per_token = NEW_PRESETS[stem]
    m = _preset(stem)
    assert context <= m.config["max_position_embeddings"], stem
    try:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine, context_length=context))
    except InputError as exc:  # an engine refusal is a verdict: it names the model or a flag
        assert exc.field, f"{stem} ({engine}): refusal names no field: {exc}"
        return
    assert res.context_length == context
    assert res.kv_bytes_per_token == kv_per_token, (stem, engine, res.kv_bytes_per_token)
    assert res.starts and res.kv_pool_tokens >= context, (stem, engine, res.reasons)

"""Gemma-3's published configs write only the text fields that differ from transformers' ``Gemma3TextConfig``
(google/gemma-3-4b-it: hidden 2560, intermediate 10240, 34 layers, sliding window 1024); both engines load that class
and so read the rest from its defaults.  kvplan does the same (``kvplan.hfconfig.normalize.gemma3_text_defaults``)
instead of refusing the config for a missing head count (issue 25 item 7: Gemma-3 sizes in the catalog).

Numbers derived by hand from transformers 5.22 ``models/gemma3/configuration_gemma3.py`` and the config in
configs/models/google--gemma-3-4b-it.toml.
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.hfconfig.layer_kinds import layer_kinds
from kvplan.hfconfig.normalize import flatten_config, gemma3_text_defaults
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit

STEM = "google--gemma-3-4b-it"


def _config() -> dict:
    return p.load_model_file(p.configs_dir() / "models" / f"{STEM}.toml", use_cache=False).config


def test_defaults_fill_only_what_the_config_leaves_out():
    flat = gemma3_text_defaults({"model_type": "gemma3_text", "hidden_size": 2560, "sliding_window": 1024})
    assert (flat["hidden_size"], flat["sliding_window"]) == (2560, 1024)
    assert (flat["num_attention_heads"], flat["num_key_value_heads"], flat["head_dim"]) == (8, 4, 256)
    assert flat["vocab_size"] == 262_208


def test_other_model_types_get_no_gemma3_defaults():
    flat = flatten_config({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64})
    assert "num_key_value_heads" not in flat


def test_gemma3_4b_reads_like_the_engines():
    """34 layers, every sixth one global (sliding_window_pattern 6): layers 5, 11, 17, 23, 29 -> 5 full, 29
    sliding; 4 KV heads of 256."""
    flat = flatten_config(_config())
    kinds = layer_kinds(flat)
    assert (len(kinds), kinds.count("full"), kinds.count("swa")) == (34, 5, 29)
    assert (flat["num_key_value_heads"], flat["head_dim"], flat["sliding_window"]) == (4, 256, 1024)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_gemma3_4b_plans(engine: str):
    """bf16 K and V: 34 layers x 2 x 4 heads x 256 x 2 B = 139,264 B per token of full context."""
    res = fit(Deployment(model="google/gemma-3-4b-it", gpu="l4", engine=engine, context_length=32_768))
    assert res.starts, res.reasons
    assert res.kv_bytes_per_token == 34 * 2 * 4 * 256 * 2

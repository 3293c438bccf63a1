"""The Hugging Face ``config.json`` keys a model preset's ``[config]`` table may hold.

Geometry and what the weight estimate needs; anything else in a preset is a typo and is rejected.  A new family
that reads a new config field adds it here (one place), with the preset that needs it.
"""

from __future__ import annotations

# Hugging Face config.json keys a preset's [config] table may hold (geometry and
# what the weight estimate needs).  Anything else is a typo and is rejected.
CONFIG_KEYS = frozenset((
    "architectures", "model_type", "num_hidden_layers", "hidden_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "v_head_dim", "max_position_embeddings", "rope_scaling", "rope_theta",
    "torch_dtype", "dtype", "quantization_config", "tie_word_embeddings", "vocab_size", "intermediate_size",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "index_head_dim", "index_n_heads",
    "index_topk", "compress_ratios", "o_lora_rank", "o_groups", "num_nextn_predict_layers",
    "kv_source_layer_ids", "index_source_layer_ids", "vision_n_layers", "engram_table_layers", "sliding_window",
    "layer_types", "sliding_window_pattern", "max_window_layers", "use_sliding_window", "attention_chunk_size",
    "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel_dim", "hybrid_override_pattern", "mamba_num_heads",
    "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "expand", "mamba_d_state", "mamba_d_conv",
    "mamba_expand", "mamba_ssm_dtype", "attn_layer_period", "attn_layer_offset", "moe_intermediate_size",
    "n_routed_experts", "num_experts", "num_local_experts", "n_shared_experts", "num_experts_per_tok",
    "first_k_dense_replace", "expert_layer_period", "expert_layer_offset", "shared_expert_intermediate_size",
    "decoder_sparse_step", "mlp_only_layers", "moe_layer_freq", "kv_cache_quant_algo",
    "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "swa_num_attention_heads",
    "hybrid_layer_pattern", "global_head_dim", "num_global_key_value_heads", "text_config", "vision_config",
    "attention_bias", "indexer_types", "index_topk_freq", "index_skip_topk_offset", "qk_head_dim",
    "rope_parameters",
))

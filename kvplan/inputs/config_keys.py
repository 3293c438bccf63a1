"""The Hugging Face ``config.json`` keys a model preset's ``[config]`` table may hold.

Geometry and what the weight estimate needs; anything else in a preset is a typo and is rejected.  A new family
that reads a new config field adds it here (one place), with the preset that needs it.  Every name is a real
config.json field of a published model (the preset that carries it names the file).
"""

from __future__ import annotations

# Hugging Face config.json keys a preset's [config] table may hold (geometry and
# what the weight estimate needs).  Anything else is a typo and is rejected.
CONFIG_KEYS = frozenset(
    (
        "architectures",
        "model_type",
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "v_head_dim",
        "max_position_embeddings",
        "rope_scaling",
        "rope_theta",
        "torch_dtype",
        "dtype",
        "quantization_config",
        "tie_word_embeddings",
        "vocab_size",
        "intermediate_size",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "index_head_dim",
        "index_n_heads",
        "index_topk",
        "compress_ratios",
        "o_lora_rank",
        "o_groups",
        "num_nextn_predict_layers",
        "kv_source_layer_ids",
        "index_source_layer_ids",
        "vision_n_layers",
        "engram_table_layers",
        "sliding_window",
        "layer_types",
        "sliding_window_pattern",
        "max_window_layers",
        "use_sliding_window",
        "attention_chunk_size",
        "full_attention_interval",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "hybrid_override_pattern",
        "mamba_num_heads",
        "mamba_head_dim",
        "ssm_state_size",
        "n_groups",
        "conv_kernel",
        "expand",
        "mamba_d_state",
        "mamba_d_conv",
        "mamba_expand",
        "mamba_ssm_dtype",
        "attn_layer_period",
        "attn_layer_offset",
        "moe_intermediate_size",
        "n_routed_experts",
        "num_experts",
        "num_local_experts",
        "n_shared_experts",
        "num_experts_per_tok",
        "first_k_dense_replace",
        "expert_layer_period",
        "expert_layer_offset",
        "shared_expert_intermediate_size",
        "decoder_sparse_step",
        "interleave_moe_layer_step",  # Llama-4: every step-th layer MoE (Maverick 2)
        "intermediate_size_mlp",  # Llama-4: the dense layers' MLP width
        "mlp_only_layers",
        "moe_layer_freq",
        "kv_cache_quant_algo",
        "swa_num_key_value_heads",
        "swa_head_dim",
        "swa_v_head_dim",
        "swa_num_attention_heads",
        "hybrid_layer_pattern",
        "global_head_dim",
        "num_global_key_value_heads",
        "text_config",
        "vision_config",
        "attention_bias",
        "indexer_types",
        "index_topk_freq",
        "index_skip_topk_offset",
        "qk_head_dim",
        "rope_parameters",
        # Gemma 3n / Gemma 4 (google/gemma-4-26B-A4B, nvidia/Gemma-4-31B-IT-NVFP4 text_config): KV sharing across
        # the last layers, K = V on full-attention layers, per-layer inputs, the MoE block
        "num_kv_shared_layers",
        "attention_k_eq_v",
        "hidden_size_per_layer_input",
        "vocab_size_per_layer_input",
        "enable_moe_block",
        "top_k_experts",
        "use_double_wide_mlp",
        "use_bidirectional_attention",  # Gemma-4: "vision" makes vLLM pick its multimodal-prefix backends
        # GLM-5.2 / 5.3 (zai-org/GLM-5.2): sparse-index pattern and per-layer MLP kinds (also poolside Laguna)
        "index_topk_pattern",
        "mlp_layer_types",
        # Nemotron-H 3.x (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8, -Ultra-550B-A55B): layer pattern as a list,
        # SSM cache dtype, conv bias, shared-expert and latent MoE widths
        "layers_block_type",
        "mamba_ssm_cache_dtype",
        "use_conv_bias",
        "moe_shared_expert_intermediate_size",
        "moe_latent_size",
        # Kimi-Linear / Kimi-K3 (moonshotai/Kimi-K3): the linear-attention block description
        "linear_attn_config",
        # MiMo-V2-Flash (XiaomiMiMo/MiMo-V2-Flash): sliding-window length field
        "sliding_window_size",
    )
)

# The ``vision_config`` fields a preset keeps (the vision tower's size: SGLang's VLM mem-fraction adjustment and the
# weight estimate read them); the rest of a vision_config is left out.
VISION_CONFIG_KEYS = frozenset(
    (
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "intermediate_size",
        "num_attention_heads",
        "num_heads",
        "patch_size",
        "image_size",
        "depth",
        "n_layers",
        "out_hidden_size",
        "spatial_merge_size",
        "temporal_patch_size",
        "vt_hidden_size",
        "vt_num_hidden_layers",
        "vt_intermediate_size",
        "vt_num_attention_heads",
    )
)

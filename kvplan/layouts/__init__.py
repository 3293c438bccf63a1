"""One KV layout, one small module: GQA/MHA, MLA, DSA, DeepSeek-V4, sliding window, Mamba state.

Each module holds keyword-only pure functions returning integer bytes (or exact
fractions where the engine itself works in fractional bytes per token).
"""

"""``genesis.generation``: text generation for causal language models (the public import path).

The implementation lives in :mod:`genesis.models.generation` with the rest of the LLM stack; this module re-exports
its public names: the KV cache, the logits processors, sampling, ``generate`` / ``stream_generate`` and the
CUDA-graph decoder.
"""

from genesis.models.generation import (
    GenerationOptions,
    GraphedDecoder,
    KVCache,
    Tensor,
    apply_repetition_penalty,
    generate,
    sample_from_logits,
    stream_generate,
    warp_logits,
)

__all__ = [
    "GenerationOptions", "GraphedDecoder", "KVCache", "Tensor", "apply_repetition_penalty", "generate",
    "sample_from_logits", "stream_generate", "warp_logits",
]

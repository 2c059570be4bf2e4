"""``genesis.tokenizer``: the tokenizer of Hugging Face model directories (the public import path).

The implementation lives in :mod:`genesis.models.tokenizer` with the rest of the LLM stack; this module re-exports
its public names: :class:`Tokenizer` (encoding, decoding, chat templates), :class:`StreamDecoder`,
``train_bpe_tokenizer`` and the ChatML constants.
"""

from genesis.models.tokenizer import (
    CHATML_SPECIAL_TOKENS,
    CHATML_TEMPLATE,
    SPECIAL_TOKEN_NAMES,
    StreamDecoder,
    Tokenizer,
    train_bpe_tokenizer,
)

__all__ = [
    "CHATML_SPECIAL_TOKENS", "CHATML_TEMPLATE", "SPECIAL_TOKEN_NAMES", "StreamDecoder", "Tokenizer",
    "train_bpe_tokenizer",
]

"""The four special tokens every model, tokenizer and decoder in the book agrees on, and their fixed ids.

This module imports nothing: models, data loading, the tokenizer and decoding all read the ids from here,
so none of them needs to import another to know what ``<pad>`` is.

    <pad> = 0    padding (hidden from attention, ignored by the loss)
    <s>   = 1    beginning of sentence (BOS): the decoder's first input
    </s>  = 2    end of sentence (EOS): appended to every source; decoding stops at it
    <unk> = 3    a character the tokenizer never saw in training
"""

from __future__ import annotations

__all__ = ["PAD", "BOS", "EOS", "UNK", "SPECIAL_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID"]

PAD = "<pad>"
BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
#: The special tokens in id order: a tokenizer must give them ids 0, 1, 2, 3.
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(len(SPECIAL_TOKENS))

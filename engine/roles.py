"""Which role each family plays, and the attention kinds a role has: the names the window
needs at start-up, before torch (and any adapter) is imported. engine.adapters picks the
code for each family; this says only what the family is (beside engine.kinds, which names
the kinds)."""
from __future__ import annotations

from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF

# Every family is one of three roles; tracing, decoding and the views speak roles.
ROLE_OF_FAMILY = {
    "translator": "encoder-decoder", "gpt": "decoder", "bert": "encoder",
    "hf-bert": "encoder", "hf-encoder": "encoder", "hf-decoder": "decoder", "hf-seq2seq": "encoder-decoder",
}
KINDS_OF_ROLE = {
    "encoder": (ENCODER_SELF,),
    "decoder": (DECODER_SELF,),
    "encoder-decoder": (ENCODER_SELF, DECODER_SELF, CROSS),
}
KINDS_OF_FAMILY = {family: KINDS_OF_ROLE[role] for family, role in ROLE_OF_FAMILY.items()}

"""The names of the experiments' choices, without torch: the command-line parser and the
window offer them before any model (and torch) is loaded (tests/gui/test_startup.py)."""
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF

HEADS, HEADS_BY_POS, RESID_PRE, ATTN_OUT, MLP_OUT = "heads", "heads-by-pos", "resid-pre", "attn-out", "mlp-out"
# An encoder-decoder's other heads: cross-attention (queries over the decoder's ids) and the
# encoder's self-attention (over the source's); "heads" is always the decoder's self-attention.
CROSS_HEADS, CROSS_HEADS_BY_POS = "cross-heads", "cross-heads-by-pos"
ENCODER_HEADS, ENCODER_HEADS_BY_POS = "encoder-heads", "encoder-heads-by-pos"
POINTS = (HEADS, HEADS_BY_POS, RESID_PRE, ATTN_OUT, MLP_OUT)
HEAD_KIND = {HEADS: DECODER_SELF, CROSS_HEADS: CROSS, ENCODER_HEADS: ENCODER_SELF}   # heads' points -> their kind
SEQ2SEQ_POINTS = POINTS + (CROSS_HEADS, CROSS_HEADS_BY_POS, ENCODER_HEADS, ENCODER_HEADS_BY_POS)
LOGIT_DIFF, LOGPROB = "logit_diff", "logprob"
METRICS = (LOGIT_DIFF, LOGPROB)
EXACT, ATTRIBUTION, DLA = "exact", "attribution", "dla"
METHODS = (EXACT, ATTRIBUTION, DLA)

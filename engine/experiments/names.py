"""The names of the experiments' choices, without torch: the command-line parser and the
window offer them before any model (and torch) is loaded (tests/test_startup.py)."""

HEADS, HEADS_BY_POS, RESID_PRE, ATTN_OUT, MLP_OUT = "heads", "heads-by-pos", "resid-pre", "attn-out", "mlp-out"
POINTS = (HEADS, HEADS_BY_POS, RESID_PRE, ATTN_OUT, MLP_OUT)
LOGIT_DIFF, LOGPROB = "logit_diff", "logprob"
METRICS = (LOGIT_DIFF, LOGPROB)
EXACT, ATTRIBUTION, DLA = "exact", "attribution", "dla"
METHODS = (EXACT, ATTRIBUTION, DLA)

"""The family sweep's fixed list (issue 57), shared by the sweep's test and the atlas's: a family
added here is opened and compared by one and built into an atlas by the other."""

# family -> the class the sweep must give it (and, for a refusal, words of its sentence)
EXPECTED = {
    "bert": ("exact", ""), "roberta": ("exact", ""), "gpt2": ("exact", ""), "llama": ("exact", ""),
    "qwen3": ("exact", ""), "mistral": ("exact", ""), "gemma2": ("exact", ""), "gemma3_text": ("exact", ""),
    "gpt_oss": ("exact", ""), "granite_swa": ("exact", ""), "granitemoe_swa": ("exact", ""),
    "gemma4_text": ("exact", ""), "t5": ("exact", ""), "bart": ("exact", ""), "qwen3_next": ("exact", ""),
    "bamba": ("exact", ""), "falcon_h1": ("exact", ""), "granitemoehybrid": ("exact", ""), "jamba": ("exact", ""),
    "lfm2": ("exact", ""), "qwen3_5_text": ("exact", ""),
    "bloom": ("dense", ""), "gpt_neo": ("dense", ""), "ibert": ("dense", ""), "albert": ("dense", ""),
    "diffllama": ("dense", ""), "fsmt": ("refused", "does not take an encoder-decoder"),
    "inkling_text": ("refused", "different numbers of query heads"),
    "inkling2_text": ("refused", "keys are not the tokens"),
    "deepseek_v4": ("refused", "keys are not the tokens"),
    "dots3_note_text": ("exact", ""), "deepseek_v32": ("exact", ""),
}
# Falcon-H1 is not here: its Mamba-2 mixer runs beside attention in every layer.
HYBRIDS = ("qwen3_next", "bamba", "granitemoehybrid", "jamba", "qwen3_5_text")
# Their linear layers drawn as effective attention (engine.seam.linear_mixing): gated delta net, Mamba-2.
EFFECTIVE = ("qwen3_next", "bamba", "granitemoehybrid", "qwen3_5_text", "falcon_h1")

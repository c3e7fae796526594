"""A tooltip for every control of every view, in one place so they read alike.

``apply_tooltips(title, view)`` sets them when the window builds a view; a control that
already has its own tooltip keeps it.
"""
from __future__ import annotations

from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QSlider, QWidget

KIND = "Which attention: encoder self, decoder self (masked) or cross (output looking at the input)"
LAYER = "Which layer (0 is the first the text goes through); every view follows it"
HEAD = "Which head of the layer; every view follows it"

TIPS: dict[str, dict[str, str]] = {
    "Head detail": {"kind_box": KIND, "layer_box": LAYER, "head_box": HEAD,
                    "agg_box": "One head, or a summary of the layer's heads (mean or max per cell)"},
    "Head lines": {"kind_box": KIND, "layer_box": LAYER,
                   "threshold": "Hide lines whose weight is below this (bertviz draws every line: 0)",
                   "normalise": "Stretch each head so its strongest line is fully opaque",
                   "hide_special": "Leave out [CLS], [SEP], <s>, </s> and other special tokens",
                   "pair_filter": "For a sentence pair: only lines from sentence A to B, or B to A",
                   "keys_per_query": "A long text: how many of each query's strongest keys get a line (the weight "
                                     "of the other keys is said below the lines, not drawn)",
                   "all_button": "Show every head of the layer at once, each in its colour"},
    "Rollout": {"kind_box": KIND, "mode": "Rollout through the layers (with or without the residual), or one "
                "layer's mean / max over heads", "layer": "Show the rollout after this layer"},
    "Head statistics": {"kind_box": KIND},
    "Neurons": {"kind_box": KIND, "layer_box": LAYER, "head_box": HEAD,
                "query_box": "The query token whose q, k products and weights are shown"},
    "Decoding": {"strategy": "greedy: the most likely token; beam: keep the best hypotheses; sample: draw one",
                 "beam_width": "How many hypotheses beam search keeps",
                 "length_penalty": "Beam score = log-probability / length ** this (0: no length normalisation)",
                 "temperature": "Sampling: below 1 sharper, above 1 flatter",
                 "top_k": "Sampling: only the k most likely tokens (0: all)",
                 "top_p": "Sampling: only the most likely tokens whose probabilities add up to p",
                 "seed": "Sampling: the same seed draws the same tokens",
                 "reset_button": "Start decoding the text again from the beginning",
                 "play_button": "Step on its own at the chosen speed", "layer_box": LAYER},
    "Training": {"slider": "Scrub through the probe traces recorded while training",
                 "family": "Train a translator (encoder-decoder) or a GPT (decoder)",
                 "corpus": "A tab-separated English-German pairs file, or any UTF-8 text for the GPT; empty: the "
                           "built-in corpus",
                 "size": "tiny: seconds, for trying; small: the size of the bundled models",
                 "steps_box": "How many training steps", "lr": "Peak learning rate (warm-up, then cosine decay)",
                 "probe_text": "The sentence whose attention is recorded while training",
                 "probe_every": "Record the probe's attention every this many steps",
                 "start_button": "Start training in the background", "stop_button": "Stop after this step and keep "
                 "the model trained so far", "save_button": "Save the trained model (and its time-lapse)",
                 "use_button": "Open the trained model in the window's views",
                 "open_lapse_button": "Replay the time-lapse saved beside a checkpoint"},
    "Positions": {"d_model": "Width of the encoding (number of dimensions)", "n_positions": "How many positions",
                  "base": "The base of the frequencies (10000 in the paper)", "position": "The position shown on "
                  "the clocks", "play_button": "Move the position on its own", "k": "The offset k of "
                  "PE(pos + k) = R(k) PE(pos)", "depth": "Which pair of dimensions (2i, 2i + 1)",
                  "use_model": "Show the loaded model's own encoding instead of the formula"},
    "Compare": {"same_button": "B is A's weights run by attnscope's own encoder (Hugging Face BERT)",
                "open_button": "B is another model: a checkpoint or a folder", "run_button": "Run both on the text",
                "kind_box": KIND, "layer_box": LAYER, "head_box": HEAD},
}
FALLBACK = {"Browse…": "Choose a file", "": "Select every row"}
CONTROLS = (QAbstractButton, QComboBox, QAbstractSpinBox, QSlider, QLineEdit)


def controls(root: QWidget) -> list[QWidget]:
    """The controls a user can touch under ``root`` (not the editors inside spin or combo boxes)."""
    return [c for c in root.findChildren(QWidget)
            if isinstance(c, CONTROLS) and not isinstance(c.parent(), (QComboBox, QAbstractSpinBox))]


def apply_tooltips(title: str, view: QWidget) -> None:
    for name, tip in TIPS.get(title, {}).items():
        control = getattr(view, name, None)
        if isinstance(control, QWidget) and not control.toolTip():
            control.setToolTip(tip)
    for control in controls(view):     # unnamed ones: a table's corner, a file button
        if not control.toolTip():
            text = control.text() if isinstance(control, QAbstractButton) else ""
            control.setToolTip(FALLBACK.get(text, text or title))

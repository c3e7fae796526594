"""Training: loops as generators of progress records with a clean stop (loops.py), their
records (records.py, no torch), time-lapse probes of attention while a model learns
(timelapse.py) and evaluation (evaluation.py). Public: the names gui/ and cli/ use, listed in
``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.training.evaluation import language_model_scores, translation_scores, translator_report
    from attnscope.engine.training.loops import run_training, train_gpt, train_translator
    from attnscope.engine.training.records import GPT_RECIPE, TrainConfig, TrainProgress
    from attnscope.engine.training.timelapse import Probe, load_timelapse, save_timelapse, timelapse_path

_PUBLIC = {
    "language_model_scores": "evaluation",
    "translation_scores": "evaluation",
    "translator_report": "evaluation",
    "run_training": "loops",
    "train_gpt": "loops",
    "train_translator": "loops",
    "GPT_RECIPE": "records",
    "TrainConfig": "records",
    "TrainProgress": "records",
    "Probe": "timelapse",
    "load_timelapse": "timelapse",
    "save_timelapse": "timelapse",
    "timelapse_path": "timelapse",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["GPT_RECIPE", "Probe", "TrainConfig", "TrainProgress", "language_model_scores", "load_timelapse",
           "run_training", "save_timelapse", "timelapse_path", "train_gpt", "train_translator",
           "translation_scores", "translator_report"]

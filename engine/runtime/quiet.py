"""transformers and accelerate kept quiet on the terminal while attnscope loads through them.

Why: a load reports its progress through engine.loading.progress (the window's bar, the CLI's
tqdm); transformers' own progress bars and load reports (accelerate's, when a model is
spread) would print over them, and what goes wrong becomes one load error, not a log.
"""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def quiet_transformers():
    """No progress bars or load reports on the terminal (transformers', or accelerate's when a
    model is spread) inside the block; as they were after it."""
    import logging

    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    accelerate_log = logging.getLogger("accelerate")
    accelerate_level = accelerate_log.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    accelerate_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        accelerate_log.setLevel(accelerate_level)
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()

"""Gradient mode never leaks out of an engine generator into the thread that advanced it.

torch's grad mode is per thread; worker threads are reused. A decoding step must leave the
thread able to train, and a thread that ran inference must still be able to decode.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from attnscope.engine.corpora.german import make_splits
from attnscope.engine.decoding.session import DecodeSession, DecodeSettings
from attnscope.engine.loading.demo import random_model
from attnscope.engine.training.loops import TrainConfig, run_training, train_translator

TEXT = "the big dog sees the small cat ."


def _tiny_training():
    pairs = make_splits(seed=0, n_train=60, n_valid=8, n_test=8)
    config = TrainConfig(size="tiny", steps=3, batch_size=8, warmup=1, report_every=1, eval_every=3)
    return run_training(train_translator(pairs["train"], pairs["valid"], config))


def test_a_decoding_step_then_training_on_the_same_thread():
    session = DecodeSession(random_model("translator"), TEXT, DecodeSettings(max_new_tokens=4))
    steps = session.steps()
    with ThreadPoolExecutor(max_workers=1) as pool:  # one thread: every job lands on it
        first = pool.submit(next, steps).result()
        assert pool.submit(torch.is_grad_enabled).result()
        trained = pool.submit(_tiny_training).result()
        second = pool.submit(next, steps).result()   # and decoding goes on afterwards
    assert trained.meta["training"]["steps"] == 3
    assert first.step == 0 and second.step == 1
    assert isinstance(second.self_rows, np.ndarray)


def test_decoding_works_on_a_thread_whatever_its_grad_mode():
    for mode in (True, False):
        session = DecodeSession(random_model("gpt"), TEXT, DecodeSettings(max_new_tokens=2))
        steps = session.steps()

        def step_with(enabled):
            with torch.set_grad_enabled(enabled):
                record = next(steps)
                return record, torch.is_grad_enabled()

        with ThreadPoolExecutor(max_workers=1) as pool:
            record, after = pool.submit(step_with, mode).result()
        assert after is mode                         # the caller's mode is back after the step
        assert record.self_rows.shape[0] == 2


def test_training_enables_gradients_even_on_a_no_grad_thread():
    with ThreadPoolExecutor(max_workers=1) as pool:
        def train_without_grad():
            torch.set_grad_enabled(False)            # as a thread that ran inference might be left
            try:
                return _tiny_training()
            finally:
                torch.set_grad_enabled(True)
        assert pool.submit(train_without_grad).result().meta["training"]["steps"] == 3

"""Issue 46: every public function of the engine (what each package's face offers gui/, cli/ and
scripts) answers a wrong type with the project's own error in one sentence: called with None for
each of its required arguments, 39 of 67 raised AttributeError or TypeError from deep inside."""
from __future__ import annotations

import importlib
import inspect

import pytest

from tests.helpers.doors import public_functions

# None is a value these take on purpose: no model yet (reads_chat: no), the default corpus, no
# interventions, the host's memory, no NDIF API key kept.
NONE_IS_AN_ANSWER = {"attnscope.engine.adapters.reads_chat", "attnscope.engine.corpora.corpus_label", "attnscope.engine.interventions.applied",
                     "attnscope.engine.runtime.free_bytes", "attnscope.engine.loading.use_api_key"}


@pytest.mark.parametrize("qualified", sorted(public_functions()))
def test_a_public_function_given_none_answers_in_the_projects_words(qualified):
    package, name = qualified.rsplit(".", 1)
    fn = getattr(importlib.import_module(package), name)
    required = [p for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not required or qualified in NONE_IS_AN_ANSWER:
        pytest.skip("takes no argument" if not required else "None is one of its answers")
    try:
        result = fn(*[None] * len(required))
        if inspect.isgenerator(result):
            next(result)
        elif hasattr(result, "__enter__"):        # a context manager: its door is its entry
            with result:
                pass
    except StopIteration:
        return
    except Exception as exc:          # noqa: BLE001 - what is raised is the point
        assert type(exc).__module__.startswith("attnscope.engine."), f"{qualified}: {type(exc).__name__}: {exc}"
        said = str(exc)
        assert said.strip() and "\n" not in said, f"{qualified}: {said!r}"
        return
    pytest.fail(f"{qualified}(None, ...) returned instead of saying what is wrong")

"""The window says when a model is drawn by the dense fallback (issue 57 part 5): a family whose
attention never reaches the seam (GPT-Neo) opens, and the banner says, from loading on and after
its Run, once, that it is drawn from its own attention weights and that long texts need the seam."""


def test_the_banner_says_a_fallback_model_is_drawn_from_its_own_weights(window_on, qtbot, tmp_path):
    from tools.family_sweep import build

    folder = build(tmp_path, "gpt_neo", "decoder")
    w = window_on("random-gpt")
    old = w.state.loaded
    assert "own attention weights" not in w.banner.text()
    w.opening.open_source(str(folder))
    qtbot.waitUntil(lambda: w.state.loaded is not old, timeout=120000)
    said = "drawn from its own attention weights; long texts need the seam"
    assert w.state.loaded.meta.get("dense")
    qtbot.waitUntil(lambda: w.state.trace is not None or w.last_error, timeout=120000)
    assert not w.last_error, w.last_error
    assert not w.banner.isHidden() and w.banner.text().count(said) == 1      # the trace's note is not said twice
    w.state.set_model(w.state.loaded)          # no trace on screen yet (as right after loading): said still
    assert not w.banner.isHidden() and w.banner.text().count(said) == 1


def test_why_on_a_fallback_model_says_why_in_the_panel_before_any_job(window_on, qtbot, tmp_path):
    """Asked on a cell of a fallback model, Why says in its panel's status line that it needs the
    seam, naming itself, and starts no job; the hint "Right-click a cell…" gives way to a short line
    pointing there (the sentence, drawn in the plot, was cut at both sides)."""
    from tools.family_sweep import build
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.gui.views.why_panel import EMPTY, REFUSED

    folder = build(tmp_path, "gpt_neo", "decoder")
    w = window_on("random-gpt")
    old = w.state.loaded
    w.opening.open_source(str(folder))
    qtbot.waitUntil(lambda: w.state.loaded is not old and w.state.trace is not None, timeout=120000)
    w.state.ask_why(DECODER_SELF, 0, 0, 2, 1)
    p = w.views["Why"]
    said = p.status.text()
    assert said.startswith(w.state.loaded.name) and "Why (the split of one attention score) needs" in said
    assert not p.jobs.busy and p.map._empty_label.text == REFUSED      # the hint is gone; the sentence is above
    w.opening.open_source("random-gpt")      # then a model the seam reads: the refusal was of the one before
    qtbot.waitUntil(lambda: not w.state.loaded.meta.get("dense"), timeout=120000)
    assert p.status.isHidden() and p.map._empty_label.text == EMPTY and p.asked is None

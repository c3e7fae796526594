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

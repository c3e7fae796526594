"""Broken and hostile inputs: model files, texts and option values (issue #14).

``cases.build_all(folder)`` writes every broken file into ``folder`` and returns the cases;
the tests run each through the window's loader (engine.loading.catalog.open_model) and the CLI,
and ``measure.py`` counts clean and unclean outcomes per category in child processes.
"""

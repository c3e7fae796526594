"""The files shipped with attnscope (bundled checkpoints, corpora), read through
attnscope.engine.resources.resource: a package, so importlib.resources finds them installed."""

"""One widget per view; each is listed in ``gui.views.registry.VIEWS``."""

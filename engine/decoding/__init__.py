"""Decoding step by step: the session that drives an adapter's stepper, and its plain records."""

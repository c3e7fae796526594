"""Every way a model enters: checkpoints, Hugging Face folders, the catalog of sources, and the validation boundary."""

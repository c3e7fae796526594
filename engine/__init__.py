"""attnscope's engine: transformers that return their attention, and everything around them.

Pure PyTorch + tokenizers + safetensors. Nothing here imports Qt: the GUI observes the
engine, never the reverse (tests/test_layering.py checks it).
"""

"""Tests run headless: Qt draws offscreen unless a caller set a platform on purpose."""
import os
import tempfile
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Never touch the user's real settings: the window stores its QSettings in a throwaway file.
os.environ.setdefault("ATTNSCOPE_SETTINGS", os.path.join(tempfile.mkdtemp(prefix="attnscope-"), "settings.ini"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(min(2, torch.get_num_threads()))

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

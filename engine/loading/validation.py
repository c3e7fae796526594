"""Where the loader's checks went (issue 47: each stage's rules beside the stage). Temporary: the
names stay importable from here until tests and gui/ import them from their homes.

- error types: engine.errors (ModelLoadError, HFModelError, first_line);
- config bounds, each family's fields, Hugging Face configs, parameter counts: engine.loading.check;
- weights finite and floating point: engine.loading.build (check_tensors);
- a config.json's size: engine.loading.describe (MAX_CONFIG_BYTES);
- host memory and the refusal past it: engine.runtime.free_memory;
- files from outside (regular, zip bombs): engine.runtime.files;
- text that is not valid Unicode: engine.inputs (text_problem).
"""
from engine.errors import HFModelError, ModelLoadError, first_line  # noqa: F401
from engine.inputs import text_problem  # noqa: F401
from engine.loading.build import check_tensors  # noqa: F401
from engine.loading.check import (check_activation, check_config, check_hf_sizes, check_model_size,  # noqa: F401
                                  check_tokenizer_files, hf_config, parameter_count)
from engine.loading.describe import MAX_CONFIG_BYTES  # noqa: F401
from engine.runtime.files import check_archive, check_regular_file  # noqa: F401
from engine.runtime.free_memory import MEMORY_SHARE, available_memory, check_memory, gib  # noqa: F401

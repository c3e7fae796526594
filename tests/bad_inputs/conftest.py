"""The broken inputs are written once per test session (a few seconds) and shared."""
import pytest


@pytest.fixture(scope="session")
def bad_cases(tmp_path_factory):
    from tests.bad_inputs.cases import build_all

    return build_all(tmp_path_factory.mktemp("bad-inputs"), bomb_mib=256)

"""A test module skipped as a whole, at import, for a pytest run under the CI skip policy."""
import pytest

pytest.importorskip("no_such_module_xyz_123")


def test_never_runs():
    pass

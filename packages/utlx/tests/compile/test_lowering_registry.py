"""One registry of lowerings, per op and backend (issue 30): a backend's own lowering wins over the one for every
target, a second lowering for the same op and backend is refused, and the ops' modules register theirs there."""

from __future__ import annotations

import pytest
from tritonx import Target
from utlx.compiler.common import lowering


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(lowering, "LOWERINGS", {})
    return lowering.LOWERINGS


def test_backend_lowering_wins_over_the_generic_one(registry):
    def generic(low, ph):
        return None

    def amd(low, ph):
        return None

    lowering.register_lowering("op")(generic)
    lowering.register_lowering("op", "hip")(amd)
    assert lowering.lowering_for("op", Target.parse("hip:gfx942")) is amd
    assert lowering.lowering_for("op", Target.parse("cuda:90")) is generic
    assert lowering.lowering_for("other", Target.parse("cuda:90")) is None


def test_a_backend_only_lowering_serves_no_other_backend(registry):
    def nvidia(low, ph):
        return None

    lowering.register_lowering("op", "cuda")(nvidia)
    assert lowering.lowering_for("op", Target.parse("cuda:90")) is nvidia
    assert lowering.lowering_for("op", Target.parse("hip:gfx950")) is None
    assert lowering.lowering_for("op", None) is nvidia  # no target known: the only one there is


def test_second_lowering_for_the_same_op_and_backend_is_refused(registry):
    lowering.register_lowering("op", "cuda")(lambda low, ph: None)
    with pytest.raises(ValueError, match="'op' already has a lowering for 'cuda'"):
        lowering.register_lowering("op", "cuda")(lambda low, ph: None)
    with pytest.raises(ValueError, match="backend must be one of"):
        lowering.register_lowering("op", "cuda:90")


def test_ops_modules_register_per_backend():
    import utlx.compiler  # noqa: F401  (registers every op's lowering)

    assert ("buffer_load", "hip") in lowering.LOWERINGS and ("buffer_load", "*") not in lowering.LOWERINGS
    assert ("async_dot", "cuda") in lowering.LOWERINGS
    assert ("local_trans", "*") in lowering.LOWERINGS and ("require_layout", "*") in lowering.LOWERINGS

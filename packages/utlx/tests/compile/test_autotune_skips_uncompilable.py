"""A config utlx refuses to compile is skipped by the autotuner (with a warning), as Triton skips configs that run
out of resources; any other error still stops autotuning.

Why: a tutorial's autotuning must keep the configs utlx compiles instead of failing as a whole (Meta's
``hopper_gemm_ws`` offered ``NUM_CTAS=2`` configs utlx refused until views picked through runtime branches were
lowered, ``common/carried.py``; a config that still meets a refusal is skipped the same way).
"""

from __future__ import annotations

import warnings

import pytest
import utlx  # noqa: F401  (installs utlx's seams)
from triton.runtime import autotuner
from tritonx.errors import PassFailedError
from utlx.compiler.common.errors import UtlxCompileError


def _bench_raising(exc: BaseException):
    def original(self, *args, **kwargs):
        raise exc

    return original


def _wrapped(original):
    from utlx.fork_surface import _bench

    return _bench(original)


def test_the_autotuners_bench_is_utlxs_seam():
    from tritonx import seams

    assert seams.is_installed("utlx.autotuner-bench")
    assert autotuner.Autotuner._bench.__wrapped__ is seams.original("utlx.autotuner-bench")


def test_a_config_utlx_refuses_is_skipped_with_a_warning():
    inner = UtlxCompileError("async_descriptor_load", "its destination buffer does not come directly from a TLX op")
    try:
        try:
            raise inner
        except UtlxCompileError as exc:
            raise PassFailedError("Python pass 'utlx-lower' of pipeline 'utlx' raised") from exc
    except PassFailedError as wrapped_exc:
        failure = wrapped_exc
    bench = _wrapped(_bench_raising(failure))
    with pytest.warns(UserWarning, match=r"skips config NUM_CTAS: 2 .*UtlxCompileError: utlx\.async_descriptor_load"):
        assert bench(type("T", (), {"fn": None})(), config="NUM_CTAS: 2") == [float("inf")] * 3


def test_other_errors_still_stop_autotuning():
    bench = _wrapped(_bench_raising(RuntimeError("CUDA error: an illegal memory access")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="illegal memory access"):
            bench(object(), config="BLOCK: 64")

"""Bad calls and bad definitions fail with errors naming the op, the argument and (for calls) the kernel line."""

from __future__ import annotations

import dsl_kernels as dk
import dsl_ops as dt
import pytest
import triton.language as tl
import tritonx
from triton.compiler.errors import CompilationError
from tritonx import dsl
from tritonx.errors import DslError

# Marked smoke: the repo's compile smoke runs it on every Triton version of the matrix.
pytestmark = pytest.mark.smoke

def compile_(target, kernel, signature, constexprs=None):
    return tritonx.compile_for(target, kernel, signature=signature, constexprs=constexprs or {})


def _failure(target, kernel, signature, constexprs=None) -> str:
    with tritonx.activate(dt.lang.pipeline()), pytest.raises(CompilationError) as info:
        compile_(target, kernel, signature, constexprs)
    return str(info.value)


def test_an_out_of_range_constexpr_names_op_argument_and_line():
    text = _failure("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 40})
    assert "dsltest.rotate_left: argument 'n' must satisfy 0 <= n < 32, got 40" in text
    assert "dt.rotate_left(tl.load(x_ptr + offs), R)" in text  # Triton shows the kernel line


def test_a_runtime_value_for_a_constexpr_says_how_to_fix_it():
    text = _failure("cuda:90", dk.rotate_runtime_amount, {**dk.I32, "r": "i32"}, {"N": 128})
    assert "argument 'n' must be a compile-time value, got a runtime int32 scalar" in text
    assert "tl.constexpr" in text


def test_a_wrong_dtype_names_the_allowed_ones():
    text = _failure("cuda:90", dk.rotate_kernel, dk.F32, {"N": 128, "R": 8})
    assert "dsltest.rotate_left: argument 'x' must have dtype int32, uint32, got a fp32 tensor of shape [128]" in text


def test_a_target_without_implementation_is_named():
    text = _failure("hip:gfx942", dk.cuda_only_kernel, {"x_ptr": "*fp32"}, {"N": 64})
    assert "dsltest.cuda_only: has no implementation for target hip:gfx942 (it has emit for cuda)" in text


def test_an_inactive_language_says_how_to_enable_it():
    with pytest.raises(CompilationError) as info:
        compile_("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 8})
    text = str(info.value)
    assert "the 'dsltest' language is not active for this compile [target cuda:90]" in text
    assert "tritonx.enable_plugins(['dsltest'])" in text


def test_triton_still_works_after_a_failed_compile():
    _failure("cuda:90", dk.rotate_kernel, dk.I32, {"N": 128, "R": 40})
    assert "ld.global" in compile_("cuda:90", dk.plain_kernel, dk.F32, {"N": 128}).asm["ptx"]


def test_calling_an_op_outside_a_kernel():
    with pytest.raises(DslError, match=r"dsltest.rotate_left can only be called inside a @triton.jit kernel"):
        dt.rotate_left(1, 2)


def test_definition_errors():
    with pytest.raises(DslError, match="must be a Python identifier"):
        dsl.Language("my-lang")
    lang = dsl.Language("defs")

    @lang.op
    def one(x: dsl.Tensor()):
        """One."""

    with pytest.raises(DslError, match=r"defs.one: declared twice"):
        lang.op(one.stub)
    with pytest.raises(DslError, match=r"unknown backend in target 'rocm'"):
        one.emit("rocm")
    with pytest.raises(DslError, match=r"no op named 'two' \(ops: one\)"):
        lang.get("two")
    with pytest.raises(DslError, match="native\\(\\) needs the custom op's name"):
        one.native("cuda", "")


def test_binding_errors_show_the_signature():
    lang = dsl.Language("binding")

    @lang.op
    def pair(a: dsl.Tensor(), b: dsl.Constexpr(int) = 1):
        """Two arguments."""

    with pytest.raises(DslError, match=r"binding.pair\(a: Tensor\(\), b: Constexpr\(int\) = 1\): .*unexpected keyword"):
        pair.bind((1,), {"c": 2}, None)
    with pytest.raises(DslError, match=r"argument 'b' must be a compile-time int, got True"):
        pair.bind((tl.tensor(None, tl.int32),), {"b": True}, None)


def test_cross_argument_checks():
    lang = dsl.Language("cross")

    @lang.op(check=lambda a: None if a["lo"] < a["hi"] else f"needs lo < hi, got {a['lo']} >= {a['hi']}")
    def window(lo: dsl.Constexpr(int), hi: dsl.Constexpr(int)):
        """A window."""

    assert window.bind((1, 2), {}, None) == {"lo": 1, "hi": 2}
    with pytest.raises(DslError, match=r"cross.window: needs lo < hi, got 3 >= 2"):
        window.bind((3, 2), {}, None)

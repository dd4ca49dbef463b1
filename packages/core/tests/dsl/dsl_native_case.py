"""Compile a kernel whose op is a native custom op, in a fresh interpreter that loaded Triton's own dialect
test plugin (``libMLIRDialectPlugin.so``, custom op ``create_custom_op``: ``arith.addf %x, %x``).

Usage: ``python dsl_native_case.py <plugin path>``. On Triton 3.7/3.8 the caller sets
``TRITON_PLUGIN_PATHS`` (read when libtriton is imported); on 3.9 the library is loaded here. Prints the
TTIR, or ``DslError: <message>`` when the compile fails with one.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import triton
import tritonx
from triton.compiler.errors import CompilationError
from tritonx.errors import DslError

if __name__ == "__main__":
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 9):
        tritonx.load_native(sys.argv[1])
    import dsl_kernels as dk
    import dsl_ops as dt

    try:
        with tritonx.activate(dt.lang.pipeline()):
            compiled = tritonx.compile_for("cuda:90", dk.native_kernel, signature=dk.F32, constexprs={"N": 128})
    except (CompilationError, DslError) as exc:
        print("DslError:", exc)
        sys.exit(0)
    print(compiled.asm["ttir"])
    print("=== PTX", compiled.asm["ptx"].count("add.f32"))

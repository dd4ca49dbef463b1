"""Run Inductor's GEMM template selection on a CPU-only machine as if an H200 were present (tests only).

Why: Inductor asks the CUDA driver for the device's capability and properties while it renders a template
(``DeviceProperties.create``, TMA checks, the SM count) and Triton for the active backend's hash; none exists here.
:func:`fake_hopper` answers those questions with an sm_90 device of 132 SMs, so that
``V.choices.get_template_configs`` really runs (utlx's choices handler, the registered heuristics, Inductor's
``TritonTemplate`` rendering of the utlx template, ``store_output`` and addmm's epilogue) and the generated kernel
source can be compiled for ``cuda:90`` by ``triton.compile``. Nothing is launched.
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Iterator
from typing import Any
from unittest import mock

import torch

PROPS = types.SimpleNamespace(multi_processor_count=132, major=9, minor=0, regs_per_multiprocessor=65536,
                              max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32,
                              name="fake sm_90", total_memory=141 << 30, shared_memory_per_block_optin=232448)


@contextlib.contextmanager
def fake_hopper(max_autotune: bool = True) -> Iterator[None]:
    """An sm_90 CUDA device for Inductor's questions, and ``max_autotune`` set as given."""
    from torch._dynamo.device_interface import CudaInterface
    from torch._inductor import config

    with contextlib.ExitStack() as stack:
        for target, value in (("torch._inductor.utils.get_num_sms", lambda: 132),
                              ("torch.cuda.get_device_capability", lambda *a, **k: (9, 0)),
                              ("torch.cuda.get_device_properties", lambda *a, **k: PROPS),
                              ("torch.utils._triton.triton_hash_with_backend", lambda: "fake-sm90")):
            stack.enter_context(mock.patch(target, value))
        stack.enter_context(mock.patch.object(CudaInterface, "get_compute_capability", staticmethod(lambda *a: 90)))
        stack.enter_context(mock.patch.object(CudaInterface, "get_device_properties", staticmethod(lambda *a: PROPS)))
        stack.enter_context(config.patch(max_autotune=max_autotune))
        yield


@contextlib.contextmanager
def private_inductor_cache(path: Any) -> Iterator[None]:
    """Inductor's generated kernel files go under ``path`` (a pytest temp folder), not the system temp folder."""
    with mock.patch.dict(os.environ, {"TORCHINDUCTOR_CACHE_DIR": str(path)}):
        yield


@contextlib.contextmanager
def lowering() -> Iterator[Any]:
    """An empty ``GraphLowering`` installed as ``V.graph`` (what a lowering runs inside)."""
    import torch.fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    graph = torch.fx.Graph()
    graph.output(())
    lowering_graph = GraphLowering(torch.fx.GraphModule({}, graph))
    with V.set_graph_handler(lowering_graph):
        yield lowering_graph


def input_node(graph: Any, name: str, size: list[int], stride: list[int], dtype: torch.dtype = torch.bfloat16,
               device: str = "cuda:0", offset: int = 0) -> Any:
    """A graph input of that layout (a ``TensorBox`` over an ``InputBuffer``), registered in ``graph``."""
    from torch._inductor import ir

    layout = ir.FixedLayout(torch.device(device), dtype, size, stride, offset=offset)
    node = ir.TensorBox.create(ir.InputBuffer(name=name, layout=layout))
    graph.graph_inputs[name] = node
    return node


def contiguous(size: list[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(size):
        out.insert(0, acc)
        acc *= s
    return out


def template_choices(op: str, inputs: list[Any], **scalars: Any) -> list[Any]:
    """What Inductor's ``tuned_<op>`` asks ``V.choices`` for, the Triton-template call: ``mm``: [aten, mm
    template]; ``addmm``: inputs (bias expanded, mat1, mat2), [mm template]; ``bmm``: [aten, bmm template]."""
    from torch._inductor.kernel.bmm import aten_bmm, bmm_template
    from torch._inductor.kernel.mm import aten_mm, mm_template
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.virtualized import V

    if op == "addmm":
        kernel_inputs = MMKernelInputs(inputs, scalars=dict(alpha=scalars.get("alpha", 1), beta=scalars.get("beta", 1)))
        return V.choices.get_template_configs(kernel_inputs, [mm_template], op)
    kernel_inputs = MMKernelInputs(inputs)
    stock = [aten_bmm, bmm_template] if op == "bmm" else [aten_mm, mm_template]
    return V.choices.get_template_configs(kernel_inputs, stock, op)


def generated_source(choice: Any) -> str:
    """The kernel module Inductor generated for a template choice (its benchmark request's file)."""
    with open(choice.bmreq.module_path) as f:
        return f.read()

"""utlx.compat's direct launch passes Triton's C launcher exactly what Triton itself passes (this version).

No GPU: Triton's own ``CudaLauncher.__call__`` (the code ``CompiledKernel[grid]`` runs) is driven with a
recording stand-in for the C launcher, once the way ``CompiledKernel``'s runner calls it and once
through ``compat.direct_launch``; the recorded positional arguments must be identical. Host tensor
descriptors are expanded by a stand-in ``make_tensordesc_arg`` in both paths (the real one needs a GPU to
encode a CUtensorMap). Marked ``smoke``: the version matrix runs it on Triton 3.6 to 3.9 (no torch).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import triton
from triton.backends.nvidia import driver as nv
from triton.tools.tensor_descriptor import TensorDescriptor
from utlx import compat

pytestmark = pytest.mark.smoke

SIGNATURE = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 256]>", "M": "i32",
             "BLOCK": "constexpr"}
METAS = [{"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [128, 64], "fp4_padded": False},
         {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [64, 128], "fp4_padded": False}]


class FakeDtype:
    itemsize = 2
    is_floating_point = True


class FakeTensor:
    """What TensorDescriptor reads from a tensor: an address and a dtype (no torch on the smoke envs)."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.dtype = FakeDtype()

    def data_ptr(self) -> int:
        return self.ptr


def fake_make_tensordesc_arg(arg, metadata, *rest):
    """Triton's expansion shape (encoded map, then shape and strides) with a readable stand-in map."""
    return [("tmap", arg.base.data_ptr(), tuple(metadata["block_size"])), *arg.shape, *arg.strides]


@pytest.fixture
def fake_nvidia(monkeypatch):
    """Record C-launcher calls; expand descriptors with the stand-in; give 3.8+ an active 'driver'."""
    calls: list[tuple] = []
    monkeypatch.setattr(nv, "make_tensordesc_arg", fake_make_tensordesc_arg)
    compat.tensordesc_expander.cache_clear()
    from triton.runtime import driver as drv

    saved = drv._active
    drv._active = SimpleNamespace(allocate_default_profile_scratch=lambda *a: None)
    yield calls
    drv._active = saved
    compat.tensordesc_expander.cache_clear()


def make_cuda_launcher(calls: list, signature: dict, metas: list | None, **overrides):
    """A real ``CudaLauncher`` object whose C launcher records its arguments (``__init__`` needs a GPU)."""

    def c_launcher(*args):
        calls.append(args)

    launcher = object.__new__(nv.CudaLauncher)
    fields = dict(num_ctas=1, global_scratch_size=0, global_scratch_align=1, profile_scratch_size=0,
                  profile_scratch_align=1, launch_cooperative_grid=False, launch_pdl=False,
                  arg_annotations=["annotation"], kernel_signature=b"signature", gsan_enabled=False)
    fields.update(overrides)
    for name, value in fields.items():
        setattr(launcher, name, value)
    launcher.launch = nv.wrap_handle_tensordesc(c_launcher, signature, metas)
    return launcher, c_launcher


def fake_compiled(launcher, metas, packed=(8, 1, 213016)):
    return SimpleNamespace(run=launcher, function=0xF00, packed_metadata=packed,
                           metadata=SimpleNamespace(tensordesc_meta=metas))


def normalized(args: tuple) -> tuple:
    """3.7+ take the kernel arguments as one sequence (Triton builds a list, utlx a tuple: both are read
    with PySequence_Fast); compare them as tuples."""
    if compat.version_at_least(3, 7):
        return (*args[:-1], tuple(args[-1]))
    return args


def descriptors():
    a = TensorDescriptor(FakeTensor(0x10000), [300, 136], [136, 1], [128, 64])
    b = TensorDescriptor(FakeTensor(0x20000), [136, 512], [512, 1], [64, 256])
    return a, b


def test_direct_launch_passes_what_compiledkernel_runner_passes(fake_nvidia):
    calls = fake_nvidia
    launcher, _ = make_cuda_launcher(calls, SIGNATURE, METAS)
    grid, stream = (132, 1, 1), 0x5EED
    a, b = descriptors()
    # CompiledKernel[grid]'s runner with no hooks set: hooks and launch metadata are None
    launcher(*grid, stream, 0xF00, (8, 1, 213016), None, None, None, a, b, 300, 16)
    triton_args = calls.pop()

    call = compat.direct_launch(fake_compiled(launcher, METAS), grid)
    expand = compat.tensordesc_expander()
    call(stream, (*expand(a, METAS[0]), *expand(b, METAS[1]), 300, 16))
    assert normalized(calls.pop()) == normalized(triton_args)
    # the descriptors really were expanded (the stand-in ran in both paths)
    flat = triton_args[-1] if compat.version_at_least(3, 7) else triton_args
    assert ("tmap", 0x10000, (128, 64)) in tuple(flat)


def test_pointer_kernel_without_descriptors(fake_nvidia):
    calls = fake_nvidia
    sig = {"a": "*fp16", "n": "i32", "BLOCK": "constexpr"}
    launcher, c_launcher = make_cuda_launcher(calls, sig, None)
    assert launcher.launch is c_launcher  # Triton does not wrap launchers of descriptor-free kernels
    assert compat.raw_launcher(launcher.launch) is c_launcher
    launcher(4, 1, 1, 7, 0xF00, (4, 1, 0), None, None, None, 0xA000, 64, 128)
    triton_args = calls.pop()
    compat.direct_launch(fake_compiled(launcher, None, (4, 1, 0)), (4, 1, 1))(7, (0xA000, 64, 128))
    assert normalized(calls.pop()) == normalized(triton_args)


def test_raw_launcher_unwraps_the_descriptor_wrapper(fake_nvidia):
    launcher, c_launcher = make_cuda_launcher(fake_nvidia, SIGNATURE, METAS)
    assert launcher.launch is not c_launcher  # wrapped: it expands descriptors per call
    assert compat.raw_launcher(launcher.launch) is c_launcher


@pytest.mark.parametrize("field", ["global_scratch_size", "profile_scratch_size", "gsan_enabled"])
def test_no_direct_launch_when_triton_must_allocate_or_instrument(fake_nvidia, field):
    launcher, _ = make_cuda_launcher(fake_nvidia, SIGNATURE, METAS, **{field: 64 if "size" in field else True})
    assert compat.direct_launch(fake_compiled(launcher, METAS), (1, 1, 1)) is None


def test_no_direct_launch_for_other_launchers():
    other = SimpleNamespace(global_scratch_size=0, profile_scratch_size=0)
    compiled = SimpleNamespace(run=other, function=1, packed_metadata=(4, 1, 0), metadata=SimpleNamespace())
    assert compat.direct_launch(compiled, (1, 1, 1)) is None


def test_tensordesc_metas_need_a_tma_lowering():
    assert compat.tensordesc_metas(SimpleNamespace(metadata=SimpleNamespace(tensordesc_meta=METAS))) == METAS
    assert compat.tensordesc_metas(SimpleNamespace(metadata=SimpleNamespace(tensordesc_meta=[METAS[0], None]))) is None
    assert compat.tensordesc_metas(SimpleNamespace(metadata=SimpleNamespace())) is None


def test_expander_matches_this_versions_make_tensordesc_arg_arity(monkeypatch):
    """The expander calls make_tensordesc_arg with as many arguments as this version's takes (a stand-in
    with the real parameter list records them)."""
    params = list(inspect.signature(nv.make_tensordesc_arg).parameters)
    assert len(params) in (2, 3)
    seen = []
    namespace: dict = {"seen": seen}
    exec(f"def recorder({', '.join(params)}):\n    seen.append(({', '.join(params)},))\n    return ['m']", namespace)
    monkeypatch.setattr(nv, "make_tensordesc_arg", namespace["recorder"])
    compat.tensordesc_expander.cache_clear()
    try:
        assert compat.tensordesc_expander()("desc", {"meta": 1}) == ["m"]
    finally:
        compat.tensordesc_expander.cache_clear()
    assert len(seen) == 1 and seen[0][:2] == ("desc", {"meta": 1}) and len(seen[0]) == len(params)


def test_c_launcher_takes_as_many_positional_arguments_as_we_pass():
    """The C launcher's PyArg_ParseTuple format: 13 fixed arguments then the kernel's (3.6); 16 (3.7+)."""
    if compat.version_at_least(3, 7):
        source = (Path(nv.__file__).parent / "driver.c").read_text()
        fmt = re.search(r'PyArg_ParseTuple\(args, "(iiiKKpp[^"]*)"', source).group(1)
        units = re.findall(r"\([^)]*\)|y\*|[a-zA-Z]", fmt)
        assert len(units) == 16, fmt
    else:
        assert nv._BASE_ARGS_FORMAT == "iiiKKppOOOOOO"


def test_launch_hooks_idle_tracks_the_chains(monkeypatch):
    from triton import knobs

    idle = compat.launch_hooks_idle_fn()
    assert idle()

    def hook(metadata):
        return None

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert not idle()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert idle()
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", hook)  # a plain callable in the slot
    assert not idle()


def test_triton_version_is_one_we_support():
    assert compat.TRITON_VERSION[:2] in compat.SUPPORTED, triton.__version__


def test_cluster_launch_hands_triton_the_cluster_size_and_cluster_count(fake_nvidia):
    """``cluster_ctas=2`` on a grid of 8 CTAs: the C launcher gets 4 (it launches grid x num_ctas CTAs) and
    ``num_ctas`` 2 in the packed metadata (its cluster dimension), exactly what Triton passes for a kernel
    compiled with ``num_ctas=2`` on a grid of 4; the kernel itself stays a ``num_ctas=1`` one."""
    calls = fake_nvidia
    sig = {"a": "*fp16", "n": "i32", "BLOCK": "constexpr"}
    launcher, _ = make_cuda_launcher(calls, sig, None)
    launcher(4, 1, 1, 7, 0xF00, (4, 2, 0), None, None, None, 0xA000, 64, 128)
    clustered_by_triton = calls.pop()
    compiled = fake_compiled(launcher, None, (4, 1, 0))
    compiled.metadata.num_ctas = 1
    compat.direct_launch(compiled, (8, 1, 1), cluster_ctas=2)(7, (0xA000, 64, 128))
    assert normalized(calls.pop()) == normalized(clustered_by_triton)
    with pytest.raises(ValueError, match=r"grid\[0\]=6 is not a multiple of cluster_ctas=4"):
        compat.direct_launch(compiled, (6, 1, 1), cluster_ctas=4)
    with pytest.raises(ValueError, match=r"cluster_ctas must be >= 1, got 0"):
        compat.direct_launch(compiled, (6, 1, 1), cluster_ctas=0)
    compiled.metadata.num_ctas = 2
    with pytest.raises(ValueError, match=r"compiled with num_ctas=1, not 2"):
        compat.direct_launch(compiled, (8, 1, 1), cluster_ctas=2)

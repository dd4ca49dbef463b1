"""Clusters of independent CTAs on stock Triton (``utlx.compat.direct_launch(..., cluster_ctas=N)``).

The foundation of multicast TMA and of TLX's ``ctas_per_cga`` (`docs/utlx.md`): a kernel compiled with
``num_ctas=1`` (per-CTA layouts, ``tl.program_id`` = ``%ctaid``) launched with ``num_ctas`` = N in the packed
metadata must run every CTA once, in clusters of N consecutive CTAs. Checked from inside the kernel with the
cluster special registers.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("needs a GPU", allow_module_level=True)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from utlx import compat  # noqa: E402

HOPPER = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] >= 9


@triton.jit
def _whoami(out_ptr):
    pid = tl.program_id(0)
    rank = tl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    size = tl.inline_asm_elementwise("mov.u32 $0, %cluster_nctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    cluster = tl.inline_asm_elementwise("mov.u32 $0, %clusterid.x;", "=r", [], dtype=tl.int32, is_pure=True,
                                        pack=1)
    tl.store(out_ptr + pid * 4 + 0, pid)
    tl.store(out_ptr + pid * 4 + 1, rank)
    tl.store(out_ptr + pid * 4 + 2, size)
    tl.store(out_ptr + pid * 4 + 3, cluster)


@pytest.mark.skipif(not HOPPER, reason="thread-block clusters need sm_90+")
@pytest.mark.parametrize("cluster_ctas", [1, 2, 4])
def test_every_cta_runs_once_in_clusters_of_consecutive_ctas(cluster_ctas):
    ctas = 264
    out = torch.full((ctas * 4,), -1, dtype=torch.int32, device="cuda")
    compiled = _whoami[(ctas,)](out)  # Triton's own launch: no clusters
    torch.cuda.synchronize()
    assert out.view(ctas, 4)[:, 2].eq(1).all().item()  # one CTA per "cluster"
    assert compiled.metadata.num_ctas == 1
    out.fill_(-1)
    call = compat.direct_launch(compiled, (ctas, 1, 1), cluster_ctas=cluster_ctas)
    assert call is not None
    call(compat.current_stream_fn()(torch.cuda.current_device()), (out.data_ptr(),))
    torch.cuda.synchronize()
    got = out.view(ctas, 4).cpu()
    pid = torch.arange(ctas, dtype=torch.int32)
    assert torch.equal(got[:, 0], pid)  # every CTA ran once, program_id is still the CTA index
    assert torch.equal(got[:, 1], pid % cluster_ctas)  # consecutive CTAs share a cluster ...
    assert got[:, 2].eq(cluster_ctas).all()  # ... of the asked size
    assert torch.equal(got[:, 3], pid // cluster_ctas)

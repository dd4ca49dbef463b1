"""NVIDIA's TLX ops: Hopper (wgmma, TMA, mbarriers, warp specialization, cluster forms, inline-PTX sync ops) and
Blackwell (tensor memory, tcgen05, cluster launch control). Importing it registers their compile-path bodies for
NVIDIA targets (:mod:`.targets`), their lowerings, the ``cuda`` lowering vendor and NVIDIA's passes."""

from . import (  # noqa: F401
    barrier_ops,
    blackwell,
    bulk_copy,
    global_ops,
    mma_ops,
    refusals,
    remote,
    stages,
    sync_ops,
    tasks,
    tma_ops,
    vendor,
    warp_specialize,
)

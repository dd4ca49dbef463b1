"""Example TLX kernels shipped with utlx (readable references that the test suite compiles).

* :mod:`hopper_pipelined`: cp.async ring + async wgmma, the classic TLX GEMM (cuda:90).
* :mod:`amd_pipelined`: register-staged ring (tl.load -> local_store -> local_load -> tl.dot), gfx942/gfx950.
* :mod:`hopper_tma_persistent`: persistent TMA loads + mbarrier ring + async wgmma + TMA store (cuda:90).
* :mod:`hopper_tma_splitk`: the same ring over K slices, reduced in fp32 by atomics; skinny problems (cuda:90).
* :mod:`tiles`: what the kernels share (the grouped tile order, the pointer kernels' C store, the choice between
  a kernel's row- and column-major entry points); public, and it imports no kernel module. The TMA ring itself
  (``mainloop``, ``whole_tiles``, ``store_c``) is :mod:`hopper_tma_persistent`'s, shared by split-K and stream-K.

The vendor of a kernel is still told by its file name (``hopper_*``, ``amd_*``), not by a subpackage: the module
paths are imported by name by ``utlx.matmul``, the tests, the docs and users' code, so they stay put.
"""

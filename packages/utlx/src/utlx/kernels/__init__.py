"""Example TLX kernels shipped with utlx (readable references that the test suite compiles), filed by vendor.

* :mod:`utlx.kernels.nvidia`: the Hopper kernels (``hopper_pipelined``, ``hopper_tma_*``, ``hopper_ws_*``,
  ``hopper_flash_attention``), cuda:90.
* :mod:`utlx.kernels.amd`: ``amd_pipelined`` (register-staged ring, gfx942/gfx950) and ``amd_tlx``.
* Shared by both, here: :mod:`tiles` (the grouped tile order, the pointer kernels' C store, the choice between a
  kernel's row- and column-major entry points; public, and it imports no kernel module), :mod:`ws_ring` (the
  warp-specialized producer/consumer ring), :mod:`accumulator_io`, :mod:`grid_dependency`. The TMA ring itself
  (``mainloop``, ``whole_tiles``, ``store_c``) is :mod:`utlx.kernels.nvidia.hopper_tma_persistent`'s, shared by
  split-K and stream-K.
"""

from __future__ import annotations

"""utlx's NVIDIA kernels (Hopper, cuda:90): TMA, wgmma, mbarriers, warp specialization, clusters.

:mod:`hopper_pipelined` (cp.async ring + async wgmma), :mod:`hopper_tma_persistent` (persistent TMA ring; its
``mainloop``, ``whole_tiles`` and ``store_c`` serve the others), :mod:`hopper_tma_splitk`,
:mod:`hopper_tma_streamk`, the warp-specialized :mod:`hopper_ws_persistent`, :mod:`hopper_ws_pingpong`,
:mod:`hopper_ws_streamk`, :mod:`hopper_ws_cluster`, and :mod:`hopper_flash_attention`. What they share with the
AMD kernels is in :mod:`utlx.kernels.tiles`.
"""

"""utlx's AMD kernels (gfx942/gfx950, compile-verified and interpreter-checked: no AMD GPU was available).

:mod:`amd_pipelined` (the register-staged GEMM ring) and :mod:`amd_tlx` (the AMD TLX surface's example kernels).
What they share with the NVIDIA kernels is in :mod:`utlx.kernels.tiles`.
"""

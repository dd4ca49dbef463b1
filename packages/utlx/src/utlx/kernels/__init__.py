"""Example TLX kernels shipped with utlx (readable references that the test suite compiles).

* :mod:`hopper_pipelined`: cp.async ring + async wgmma, the classic TLX GEMM (cuda:90).
"""

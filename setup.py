"""Only the C kernels; everything else is in pyproject.toml.

They are loaded through ctypes (no Python API, so no Python headers needed) and optional:
without a C compiler the install still succeeds and the numpy/torch paths run instead.
No fused multiply-adds (-ffp-contract=off): the optimiser kernels round as numpy and torch do.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("distgraph.native._kernels",
                             sources=[f"src/distgraph/native/{f}.c"
                                      for f in ("symmetric", "segments", "sampling", "types", "rows", "labels")],
                             extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off", "-pthread"],
                             extra_link_args=["-pthread"], libraries=["m"], optional=True)])

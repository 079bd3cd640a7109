"""Build of the compiled DTable kernel; everything else is in pyproject.toml.

The kernel (selp/topk/_kernel.c) and the tree renderer (selp/topk/_render.c) are optional: where no C compiler is found the install still
succeeds and the DTable runs its pure-Python twin, and says so.
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "selp.topk._kernel",
            ["selp/topk/_kernel.c"],
            # -pthread: selp_static ranks components on several threads (none on Windows)
            extra_compile_args=[] if sys.platform == "win32" else ["-O3", "-pthread"],
            extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
            optional=True,
        ),
        # the tree writers' streaming renderer (selp/topk/render.py falls back to Python without it)
        Extension(
            "selp.topk._render",
            ["selp/topk/_render.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        ),
    ]
)

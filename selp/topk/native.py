"""Where a compiled part of selp (a C file built as an extension module, called through ctypes)
is on this machine."""

from __future__ import annotations

import importlib
import importlib.machinery
from pathlib import Path


def extension_file(module: str) -> str:
    """The path of the built extension ``selp.topk.<module>``. When selp was shipped as a zip
    (``spark.submit.pyFiles``: Spark executors), the extension cannot be imported from it, but
    ctypes can load a copy: the library is extracted once per process into a temporary
    directory. ImportError when it was not built."""
    try:
        # a module only so that its file is found
        return importlib.import_module(f"selp.topk.{module}").__file__  # type: ignore[return-value]
    except ImportError:
        pass
    import tempfile
    import zipfile

    here = Path(__file__).parent
    for parent in here.parents:  # the zip archive's own path is one of the parents
        if zipfile.is_zipfile(parent):
            inner = here.relative_to(parent).as_posix()
            with zipfile.ZipFile(parent) as z:
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    name = f"{inner}/{module}{suffix}"
                    if name in z.namelist():
                        out = Path(tempfile.mkdtemp(prefix=f"selp{module}-")) / f"{module}{suffix}"
                        out.write_bytes(z.read(name))
                        return str(out)
            break
    raise ImportError(f"selp.topk.{module} was not built")

#!/usr/bin/env python3
"""An old spelling of ``selp gen tc``, kept for command lines that still use it: the same command,
with the same options (``--target-output`` is ``--scale``)::

    python datasets/tc.py --target-output 100000 --out /tmp/tc100k
    # is
    selp gen tc --scale 100000 --out /tmp/tc100k
"""

import sys

from selp.cli import main

if __name__ == "__main__":
    main(["gen", "tc", *sys.argv[1:]], prog_name="selp")

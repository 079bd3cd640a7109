"""``python -m selp.bench``: the TC benchmark's command line (:func:`selp.bench.tc.main`)."""

import sys

from selp.bench.tc import main

sys.exit(main())

"""The error raised for a mistake in a CDSS description (``cdss.toml``, mappings, base data).

It is a :class:`selp.errors.SelpError`, so the CLI prints it as one located line
(``cdss.toml:12:7: message``) and exits 1.
"""

from __future__ import annotations

from selp.errors import SelpError


class CdssError(SelpError):
    """A user error in a CDSS: bad configuration, malformed or ill-formed mapping, bad data."""

"""The ``selp cdss`` command group (registered on the main ``selp`` command in :mod:`selp.cli`)."""

from __future__ import annotations

import click


@click.group(name="cdss")
def cdss() -> None:
    """Collaborative data sharing: peers, schema mappings and update exchange."""

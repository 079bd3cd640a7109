"""``python -m selp`` runs the command line."""

from selp.cli import main

main()

"""The ``selp`` command line: the root group (:mod:`selp.cli.root`) and the registry of its
commands, one module per command or group of commands.

The command modules only parse options and print; what they compute lives in the library, which
never imports this package. Adding a command is its module plus one line in :data:`COMMANDS`.
"""

from __future__ import annotations

from selp.cli.adapt import adapt_cmd
from selp.cli.bench import bench
from selp.cli.cdss import cdss
from selp.cli.cdss_delete import delete_cmd
from selp.cli.cdss_plan import plan_cmd
from selp.cli.check import check
from selp.cli.eval import eval_cmd
from selp.cli.gen import gen
from selp.cli.instrument import instrument_cmd
from selp.cli.maintain import maintain_cmd
from selp.cli.proql import proql
from selp.cli.root import main
from selp.cli.serve import serve
from selp.cli.topk import explain_cmd, query_cmd, topk_cmd, trees_cmd

__all__ = ["COMMANDS", "main"]

# subcommands of `selp cdss` kept in modules of their own (they add themselves to the group)
CDSS_COMMANDS = (delete_cmd, plan_cmd)

COMMANDS = (
    check,
    eval_cmd,
    instrument_cmd,
    topk_cmd,
    explain_cmd,
    query_cmd,
    trees_cmd,
    maintain_cmd,
    gen,
    bench,
    cdss,
    proql,
    serve,
    adapt_cmd,
)
for _command in COMMANDS:
    main.add_command(_command)

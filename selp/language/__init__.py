"""The datalog^sk language: syntax tree, parser, printer and static checks."""

from selp.language.ast import (
    Atom,
    Comparison,
    Const,
    Decl,
    Fact,
    Program,
    Rule,
    SkolemTerm,
    Var,
)
from selp.language.parser import parse_program, parse_program_file

__all__ = [
    "Atom",
    "Comparison",
    "Const",
    "Decl",
    "Fact",
    "Program",
    "Rule",
    "SkolemTerm",
    "Var",
    "parse_program",
    "parse_program_file",
]

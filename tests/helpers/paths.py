"""Absolute paths into the repository, so that a test passes from any working directory."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TRADE = EXAMPLES / "trade"
BIO = EXAMPLES / "cdss" / "bio"
BIDIR = EXAMPLES / "cdss" / "bidir"
POLICY = EXAMPLES / "cdss" / "policy"

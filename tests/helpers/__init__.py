"""Helpers shared by the test modules (``pythonpath = ["tests"]`` in pyproject.toml puts this
package on the path): test modules import from here, never from each other."""

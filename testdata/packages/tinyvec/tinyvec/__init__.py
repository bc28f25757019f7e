"""Tiny vectors: enough to show a wheel's module, submodule and metadata at work."""
import importlib.metadata

from .ops import add, dot

__version__ = importlib.metadata.version("tinyvec")
__all__ = ["add", "dot", "__version__"]

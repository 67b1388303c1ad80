"""TRITON sim-to-real image translation with neural neural textures for robot manipulation (README.md)."""

__version__ = "0.1.0"

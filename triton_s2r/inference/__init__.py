"""Using a trained run: translating G-buffers and sequences, writing videos, exporting textures.

The stateless ``Translator`` that loads a run directory and translates G-buffers (``translator``),
``triton-s2r translate`` for whole simulated sequences (``sequences``), the incremental, atomic video and
frame-folder writer (``video``), and ``triton-s2r export-textures`` (``export``).
"""

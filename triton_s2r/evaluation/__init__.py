"""Scoring translations, with no downloaded weights.

The metrics (``metrics``; HaarPSI in ``haarpsi``, texture recovery against the benchmark's hidden albedo in
``texture_recovery``), ``triton-s2r eval`` (``evaluate``) and the paper's downstream pose experiment,
``triton-s2r downstream`` (``downstream``).
"""

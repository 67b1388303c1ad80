"""The Hydra configs of ``triton-s2r train``: ``train.yaml`` and its groups, shipped inside the package."""

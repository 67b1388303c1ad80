"""Training and evaluation data: datasets, the Lightning data module and the training augmentation.

``datasets`` reads benchmark folders with ``dataset.yaml`` and plain user folders of UVL frames and photos;
``datamodule`` holds the Lightning data module with its seeded epoch and clip samplers; ``augment`` is the
training augmentation of both domains. It knows the dataset format, not how the built-in benchmark is generated
(that is ``triton_s2r.tabletop``).
"""

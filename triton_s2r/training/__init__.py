"""Training only: the TRITON GAN step as a LightningModule, the callbacks around it and the paired baseline.

The step is ``system``, on the values of ``step``; the jobs around it are callbacks (``callbacks``), the paired
``oracle`` baseline is built on it (``paired``), and ``curves`` is the training-curves callback. Nothing outside
training imports this wing; inference loads a run through ``triton_s2r.inference`` and never needs the Lightning
module.
"""

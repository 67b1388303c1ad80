"""Training only: the TRITON GAN step as a LightningModule (``system``, on the values of ``step``), the jobs
around it as callbacks (``callbacks``), the paired ``oracle`` baseline built on it (``paired``) and the
training-curves callback (``curves``). Nothing outside training imports this wing; inference loads a run
through ``triton_s2r.inference`` and never needs the Lightning module."""

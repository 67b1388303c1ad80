"""Training only: the TRITON GAN step as a LightningModule (``system``), the paired ``oracle`` baseline
built on it (``paired``) and the training-curves callback (``curves``). Nothing outside training imports
this wing; inference loads a run through ``triton_s2r.inference`` and never needs the Lightning module."""

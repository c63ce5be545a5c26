"""Hidden conditional random fields (paper 003): phone classification with moment and
distribution constraints, converted exactly from ML phone HMMs and trained by RPROP.

model.py: the model and its file; spline.py: the natural cubic spline basis; lattice.py:
the compiled forward-backward; data.py: segments with their frames; train.py: the
conditional likelihood, its gradient and RPROP.
"""

"""The refinement-HMM family (docs/RHMM.md): the operators every R-HMM is decoded from
(`operators`, the model and its file), the max-marginal decoder (`decoder`), the
two estimators (`spectral`, `em`), the parameters <pi, o, t, f> EM estimates and the
sampler (`params`), and the spectral method's feature templates (`templates`)."""

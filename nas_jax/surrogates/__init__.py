"""Surrogate models: kernels, exact GP regression, hyper-parameter fitting, the Surrogate API, and
the surrogates the BO engine builds on a featurizer."""

"""Acquisition functions over a Predictive, and the optimisers that maximise them over a space."""

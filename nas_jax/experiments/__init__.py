"""Experiments built on the whole library: the held-out comparison harness, the combination
matrix, the predictor experiment, kernel quality, the arc-kernel paper's Table 1, the regret of
NAS-Bench-201 searches and the HTML report of a search."""

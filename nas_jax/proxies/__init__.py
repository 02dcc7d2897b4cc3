"""Zero-cost proxies: scores of an untrained network from one forward and backward pass.

Each proxy is a pure function of a `ProxyNet` (the network's apply functions and its initial
parameters) and, for the data-dependent ones, a batch; jit and vmap apply, so one compiled
program scores many networks of one skeleton.
"""

"""Config wiring: strings of an `ml_collections` config resolved into a space, task, strategy and
executor, and the search run in its workdir."""

"""Config wiring, the one place where names become objects: the tables of spaces, parts,
strategies, schedulers, tasks and executors, the config checks, and the search run in its workdir."""

"""Figures and reports on top of the pipeline: architecture drawings, distance plots, search
curves and the HTML report of a search. Nothing in the pipeline imports this package."""

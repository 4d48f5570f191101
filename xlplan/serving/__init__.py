"""The serving model: how long one engine step of one replica takes, and what a replica holds. Pure functions on
numbers and arrays: the step and its inputs, the engines' memory rules and defaults, kernels and collectives,
the memory, compute and latency paths, queueing formulas and Little's Law.
"""

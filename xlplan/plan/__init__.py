"""The plan's steps: a plan reduced to a scenario, the runbook's seven steps, the closed form with its queueing and
latency paths, the tensor-parallel choice, the what-ifs and their breakpoints, and the vectorised sweep.
"""

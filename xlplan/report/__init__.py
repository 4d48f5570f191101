"""Words: the capacity note, the review note, the traffic report and the validation report, each from a typed result.
"""

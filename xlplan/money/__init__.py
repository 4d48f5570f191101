"""The money: the bill and $/M tokens, the managed-API comparison, owning a fleet, and the contract mix.
"""

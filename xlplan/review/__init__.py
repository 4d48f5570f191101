"""The monthly review: production's month measured against the plan, the breakpoints crossed, the re-plan, the orders
and the history.
"""

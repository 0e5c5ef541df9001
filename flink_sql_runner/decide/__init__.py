"""Deciding what to do, as plain data: change rules, the decision tree, steps, lineage and pipeline
order.
"""

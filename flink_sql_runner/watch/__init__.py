"""Keeping what was deployed running: the watcher, its records, health, stalls, events and
metrics.
"""

"""Gathering what is: stored manifests, what runs, what state exists; read before anything is
decided.
"""

"""The vocabulary every step and edge shares: stored manifests, runs and their liveness, intents,
Spark versions.
"""

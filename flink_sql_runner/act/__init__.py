"""Carrying a plan out: the executor, the runtime manifest, interrupts, progress, a deployment's
commands.
"""

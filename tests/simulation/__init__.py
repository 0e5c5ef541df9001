"""A deterministic simulation of the whole loop: the real deploy, stop, prune, Ctrl-C and two
`watch` processes on a seeded world with a virtual clock (see README.md here)."""

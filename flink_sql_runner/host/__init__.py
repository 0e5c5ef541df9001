"""The machine the deployer runs on: its processes, atomic file writes, the timing log."""

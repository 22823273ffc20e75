"""The virtual clock and the engine that advances an ARE environment on it (no I/O, no threads)."""

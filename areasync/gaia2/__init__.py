"""Gaia2 benchmark runs (`areasync bench run`): ARE's evaluation pipeline on the virtual clock."""

"""Adapters between ARE and areasync: environment, time manager, hooks, scenarios, tools."""

"""Conformance with ARE: the reference side of the comparison areasync is judged by.

For every registered scenario that needs no network, in oracle mode, a `fast` run must give the
same event log as ARE's queue-based loop and a `realtime` run the same log and tick count as
ARE's time-based loop. This package is part of areasync, not of its tests, because users'
harnesses want the same comparison:

- `areasync.conformance.reference_loops`: ARE's own loops, run as the reference (on a fake wall
  clock by default);
- `areasync.conformance.normal_form`: the id-free, tie-free view both sides are compared in
  (`normalized_log`, `first_difference`);
- `areasync.conformance.scenarios`: the reference scenarios, two of them built here;
- `areasync.conformance.scenario_json`: ARE's JSON export and import of them, as Gaia2 uses them.

Import each name from the module that defines it; `normalized_log` is also importable from here.
"""

from areasync.conformance.normal_form import normalized_log

__all__ = ["normalized_log"]

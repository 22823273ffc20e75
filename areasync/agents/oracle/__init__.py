"""The oracle agent: a perfect agent that does what the scenario's oracle says, when it says.

* `agent.py`: the agent over a live session (`run_oracle_agent`), its pacing's I/O.
* `plan.py`: what ARE's own oracle run of the scenario did, as tool calls (imports ARE).
* `pacing.py`: how the session's clock gets to an action's time, decided without I/O.
* `ids.py`: the oracle run's ids translated into the live session's.
"""

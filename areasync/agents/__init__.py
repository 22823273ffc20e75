"""Reference agents that play a live session over the WebSocket, run from a shell.

* `cli.py`: `areasync agent ...`, the subcommands' parser and the oracle's run.
* `shell.py`: what every agent command shares: options, the session's URL, the server's wait.
* `oracle/`: the oracle agent, which does what the scenario's oracle says, when it says.
* `are/`: ARE's own default agent (its ReAct loop and LLM engine) playing a live session.
* `gaia2/`: gaia2-cli's app CLIs, as commands acting on a live session.
"""

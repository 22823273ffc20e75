"""gaia2-cli's ten app CLIs (and a wait), as commands acting on a live areasync session.

* `tools.py`: the commands' entry point: which app, which session, the call and its printing.
* `commands.py`: the command table: names, options, the ARE call, what is printed.
* `usage.py`: a command line read as upstream's Click groups read it.
* `shapes.py`: what the app CLIs print, made from what ARE's tools return.
* `log.py`: each command's action in `$GAIA2_STATE_DIR/events.jsonl`, as upstream logs it.
"""

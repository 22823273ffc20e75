"""Sessions that outlive their server (`--state-dir`): journals, restore and fork.

* `journal.py`: a session's journal as the service keeps it (`SessionJournal`), and the gate
  that holds back what is not yet durable.
* `state_dir.py`: a server's state directory: its sessions' journals, admin token, retention.
* `recipes.py`: what it takes to create a session again (its scenario's source, options).
* `kept.py`: what durability reads and does of a session (`KeptSession`, which `Session` is).
* `restore.py`: a restarted server's live sessions restored from their journals, and a session
  forked from another's records (`fork_session`).
"""

"""Sessions that outlive their server (`--state-dir`): journals, restore and fork.

* `journal.py`: a session's journal as the service keeps it (`SessionJournal`), and the gate
  that holds back what is not yet durable.
* `state_dir.py`: a server's state directory: its sessions' journals, admin token, retention.
* `restore.py`: a restarted server's live sessions restored from their journals, and a session
  forked from another's records (`fork_session`).
"""

"""A session's sandbox: the only host files that code run for the session may touch.

* `audit.py`: the `Sandbox` and the audit hook that enforces it on every file operation.
* `paths.py`: how the sandbox sees a path, and the host directories it treats apart.
* `confinement.py`: ARE's file-system apps confined to their own sandbox directory.
* `host_paths.py`: what an agent is told of its sandbox's files (never the host's paths).
"""

"""Plain HTTP on the service's ports: one story for every port that answers it.

* `routes.py`: GET on the WebSocket port: health, sessions, schema, metrics, the dashboard.
* `headers.py`: the security headers of every HTTP response, on every port.
* `capped.py`: the aiohttp server of the adapters' ports, holding at most a number of sockets.
"""

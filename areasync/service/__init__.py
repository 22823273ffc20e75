"""The WebSocket + HTTP service: sessions, stream fan-out, roles and tokens."""

"""What it takes to create a session again: its scenario's source and its options.

The dashboard's "Restart" creates a new session from the same source as an ended one, with the
same mode, speed, oracle and import mode (`GET /api/sessions/<id>/source`, admin token). The
source is what `create_session` accepts: a registered scenario id, or the scenario's JSON text.
A session started from a JSON file keeps the file's text (not its path: the file may change or
go); a source larger than `max_scenario_bytes`, or a `Scenario` object handed to the service in
process, keeps none, and the session says why it cannot be restarted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from areasync.bridge.scenarios.loading import Scenario
from areasync.protocol.sessions import SessionSource


@dataclass(frozen=True)
class Recipe:
    """A session's source (exactly one of `scenario` and `scenario_json`) and options."""

    scenario: str | None
    scenario_json: str | None
    mode: str
    speed: float
    oracle: bool
    import_mode: str | None

    def source_of(self, session_id: str) -> SessionSource:
        """The fields of a `create_session` that makes this session (`session_id`) again."""
        return SessionSource(
            session_id=session_id,
            scenario=self.scenario,
            scenario_json=None if self.scenario is not None else self.scenario_json,
            mode=self.mode,
            speed=self.speed,
            oracle=self.oracle,
            import_mode=self.import_mode,
        )


def source_text(
    source: str | Path | Scenario, max_bytes: int
) -> tuple[str | None, str | None, str]:
    """(registered id, JSON text, why neither) for a session's source: one of the first two is
    set, or the third says why it could not be kept. A file is read here (call it off the
    loop); JSON text was already held to `max_bytes` when the session was admitted. Files are
    told from ids as the loader tells them (a path object, or a name ending in `.json`)."""
    if isinstance(source, Scenario):
        return None, None, "it was started from a Scenario object in the server's process"
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return None, source, ""
    if isinstance(source, Path) or source.endswith(".json"):
        path = Path(source)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                return None, None, _too_large(size, max_bytes, path.name)
            return None, path.read_text(encoding="utf-8"), ""
        except (OSError, UnicodeDecodeError) as exc:
            return None, None, f"its file {path.name} cannot be read again ({exc})"
    return source, None, ""


def _too_large(size: int, max_bytes: int, what: str) -> str:
    return (
        f"{what} is {size} bytes, above the server's {max_bytes}-byte limit "
        "(max_scenario_bytes) for scenarios sent as JSON"
    )

"""The HTML both report pages are made of: the style sheet, the Content-Security-Policy, and
escaping, links, verdict badges and folded text. Kept apart so the trace pages (`report.py`)
and the index (`report_index.py`) share one look and one policy.

The policy allows the page's own style sheet and, on a page that has one, its own script, each
by its hash, and nothing else: no network, no font, no other script, so text that slipped
through as markup still cannot run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

# Longer texts fold into a <details> showing their start.
FOLD_CHARS = 2000

STYLE = """
:root { --pass: #0a7d32; --fail: #b42318; --none: #8a6100; --line: #d9dce1; --muted: #5c6370;
  --bg-soft: #f6f7f9; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: #1c1f24; line-height: 1.45; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
.meta { color: var(--muted); margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--bg-soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.overall td { font-weight: 600; border-top: 2px solid var(--line); }
.verdict { display: inline-block; padding: .05rem .45rem; border-radius: .3rem; color: #fff;
  font-weight: 600; font-size: .8rem; letter-spacing: .02em; }
.verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); }
.verdict.none { background: var(--none); }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; font-size: .85rem;
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.why { max-width: 32rem; color: var(--muted); font-size: .85rem; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.notice { background: #fff6e0; border: 1px solid #f0d28a; padding: .5rem .8rem;
  border-radius: .3rem; }
ol.steps { list-style: none; padding: 0; margin: 0; }
ol.steps > li { border: 1px solid var(--line); border-left-width: 4px; border-radius: .3rem;
  margin: 0 0 .6rem; padding: .5rem .75rem; }
li.user { border-left-color: #2f6fd6; } li.environment { border-left-color: #b45309; }
li.step { border-left-color: #6b4fbb; } li.system, li.note { border-left-color: var(--line); }
.label { font-size: .78rem; font-weight: 600; color: var(--muted); text-transform: uppercase;
  letter-spacing: .03em; }
.thought { margin: .25rem 0 .4rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.call { background: var(--bg-soft); border-radius: .3rem; padding: .35rem .55rem; }
.tool { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; }
.result { margin-top: .4rem; } .result.error pre { color: var(--fail); }
tr.user td:first-child { border-left: 3px solid #2f6fd6; }
tr.env td:first-child { border-left: 3px solid #b45309; }
tr.agent td:first-child { border-left: 3px solid #6b4fbb; }
td.error { color: var(--fail); }
nav { margin-bottom: 1rem; } a { color: #1f5fbf; }
summary { cursor: pointer; color: var(--muted); }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; margin: .4rem 0 .8rem; }
figure { margin: 0; } figcaption { font-size: .8rem; color: var(--muted); max-width: 22rem; }
svg text { font-size: 11px; fill: #3b4049; font-family: inherit; }
svg .bar { fill: #3b6fc4; } svg .bar.pass { fill: var(--pass); } svg .track { fill: #eceef2; }
svg .axis { stroke: var(--line); }
.filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: center; margin: 0 0 .6rem;
  font-size: .9rem; }
.filters select, .filters input { font: inherit; padding: .15rem .3rem; }
.scn-head, details.scenario > summary { display: grid; align-items: baseline; gap: .5rem;
  grid-template-columns: 7.5rem 8rem minmax(10rem, 1fr) 5rem 5rem 5rem 6rem 5rem; }
.scn-head { font-weight: 600; font-size: .85rem; background: var(--bg-soft);
  padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
details.scenario { border-bottom: 1px solid var(--line); }
details.scenario > summary { padding: .35rem .5rem; font-size: .9rem; list-style: none;
  color: inherit; }
details.scenario > summary::-webkit-details-marker { display: none; }
details.scenario > summary .sid::before { content: "▸ "; color: var(--muted); }
details.scenario[open] > summary .sid::before { content: "▾ "; }
details.scenario[open] > summary { background: var(--bg-soft); }
.scn-body { padding: .3rem .5rem .8rem 1.5rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict.mixed { background: #b4660a; }
.reasons { margin: .2rem 0 .6rem; } .reasons li { margin: .2rem 0; }
.reasons .count { font-weight: 600; font-size: .8rem; color: var(--muted); }
nav.runs-nav { display: flex; flex-wrap: wrap; gap: .4rem .9rem; align-items: center; }
nav.runs-nav .siblings a, nav.runs-nav .siblings strong { margin-right: .3rem; }
table.expected td, table.expected th { width: 45%; } table.expected th:first-child { width: 10%; }
table.expected tr.differs td { background: #fdecea; }
"""


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def csp(script: str | None = None) -> str:
    """Nothing but this page's own style sheet (and `script`); links still navigate (CSP does
    not govern that)."""
    scripts = f"'{_hash(script)}'" if script else "'none'"
    return (
        f"default-src 'none'; style-src '{_hash(STYLE)}'; script-src {scripts}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )


def h(value: Any) -> str:
    """Text (untrusted) as HTML: escaped, quotes included."""
    return html.escape("" if value is None else str(value), quote=True)


def page(title: str, body: Iterable[str], script: str | None = None) -> str:
    """A whole page; `script` (ours, never the run's text) runs inline, allowed by its hash."""
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{h(csp(script))}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{h(title)}</title><style>{STYLE}</style></head><body>\n",
            *body,
            f"\n<script>{script}</script>" if script else "",
            "\n</body></html>\n",
        ]
    )


def href(target: Path, base: Path) -> str:
    """A relative link from a page in `base` to `target` (both on disk)."""
    relative = Path(os.path.relpath(target, base)).as_posix()
    return h("/".join(quote(part, safe="._-") for part in relative.split("/")))


def verdict_of(success: bool | None) -> tuple[str, str]:
    """(label, css class) of a verdict."""
    if success is True:
        return "PASS", "pass"
    if success is False:
        return "FAIL", "fail"
    return "NO VERDICT", "none"


def verdict_badge(success: bool | None) -> str:
    label, css = verdict_of(success)
    return f'<span class="verdict {css}">{label}</span>'


def duration_text(seconds: float | None) -> str:
    """Seconds as H:MM:SS."""
    if seconds is None:
        return ""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pre(text: str, css: str = "") -> str:
    """Text in a <pre>; a long one folded, showing its start."""
    attribute = f' class="{css}"' if css else ""
    if len(text) <= FOLD_CHARS:
        return f"<pre{attribute}>{h(text)}</pre>"
    return (
        f"<pre{attribute}>{h(text[:FOLD_CHARS])}</pre><details><summary>"
        f"{len(text) - FOLD_CHARS:,} more characters</summary><pre{attribute}>"
        f"{h(text[FOLD_CHARS:])}</pre></details>"
    )

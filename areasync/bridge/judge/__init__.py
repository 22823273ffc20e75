"""Gaia2's LLM judge, as ARE builds it, for the sessions of benchmark-imported scenarios.

* `llm.py`: the judge of a scenario, set up by ARE's own preprocessing (`JudgeLink`).
* `options.py`: which model judges, from `are-benchmark`'s `--judge_*` options, checked.
* `templates.py`: ARE's prompt templates, each compiled once per process.
"""

"""`--hf-*`: a dataset the Hugging Face Hub cannot give fails clearly (ARE exits 0 silently)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2.cli import main as bench_main


def test_an_unreachable_hub_dataset_is_a_clear_failure(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Offline: the Hub is unreachable whatever this machine's network, and fails at once.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    status = bench_main(
        [
            "--hf-dataset",
            "meta-agents-research-environments/gaia2",
            "--hf-config",
            "execution",
            "--hf-split",
            "validation",
            "--limit",
            "1",
            "--model",
            "openai/agent",
            "--provider",
            "local",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--output_dir",
            str(tmp_path / "out"),
        ]
    )
    assert status == 1
    err = capsys.readouterr().err
    assert "could not load meta-agents-research-environments/gaia2/execution" in err
    assert "--dataset PATH" in err
    assert not (tmp_path / "out" / "output.jsonl").exists()

"""What the `areasync` command says when it is used wrong: one clear line, a non-zero exit,
never a traceback and never a hang (every subprocess has a give-up bound)."""

from __future__ import annotations

import subprocess
import sys

from tests.bounds import PROCESS_S

GIVE_UP_S = PROCESS_S


def areasync(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "areasync.cli", *args],
        capture_output=True,
        text=True,
        timeout=GIVE_UP_S,
        check=False,
    )


def assert_one_clear_line(done: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    for phrase in phrases:
        assert phrase in last, done.stderr


def test_importing_the_cli_does_not_import_are() -> None:
    # `areasync --help` must not pay for ARE (about a second): the parser imports nothing heavy.
    code = "import sys, areasync.cli; sys.exit(1 if 'are' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], timeout=GIVE_UP_S, check=False)
    assert done.returncode == 0


def test_help_does_not_import_are() -> None:
    code = (
        "import sys, areasync.cli\n"
        "for argv in (['--help'], ['serve', '--help'], ['run', '--help']):\n"
        "    try:\n"
        "        areasync.cli.main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "sys.exit(1 if 'are' in sys.modules else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=GIVE_UP_S, check=False
    )
    assert done.returncode == 0


def test_from_areasync_import_simulation_still_works() -> None:
    code = "from areasync import LeasePolicy, Simulation\n"
    code += "print(Simulation.__name__, LeasePolicy.END)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=GIVE_UP_S
    )
    assert done.stdout.split() == ["Simulation", "end"], done.stderr


def test_mode_has_help() -> None:
    for command in ("run", "serve"):
        done = areasync(command, "--help")
        assert "how simulated time moves" in done.stdout


def test_an_invalid_mode_lists_the_valid_ones() -> None:
    done = areasync("run", "scenario_tutorial", "--mode", "turbo")
    assert_one_clear_line(done, "'turbo'", "realtime", "fast", "manual")


def test_run_in_manual_mode_refuses_at_once_instead_of_hanging() -> None:
    done = areasync("run", "scenario_tutorial", "--mode", "manual", "--oracle")
    assert done.returncode == 2
    assert_one_clear_line(done, "--mode manual", "no controller", "--mode fast")


def test_serve_refuses_a_port_out_of_range_in_one_line() -> None:
    done = areasync("serve", "--port", "99999")
    assert_one_clear_line(done, "--port", "99999", "0-65535")


def test_serve_refuses_a_host_that_is_not_this_machines_in_one_line() -> None:
    # TEST-NET-1 (RFC 5737): never an address of this machine.
    done = areasync("serve", "--host", "192.0.2.1", "--port", "0")
    assert_one_clear_line(done, "192.0.2.1", "--host")
    assert "--port" not in done.stderr


def test_agent_oracle_says_what_it_waits_for_and_gives_up() -> None:
    url = "ws://127.0.0.1:9"  # the discard port: nothing listens there
    done = areasync(
        "agent", "oracle", "--url", url, "--session", "scenario_tutorial", "--token", "t",
        "--wait", "1",
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert "waiting for the server at ws://127.0.0.1:9" in lines[0]
    assert "no server answered at ws://127.0.0.1:9" in lines[-1]
    assert "Traceback" not in done.stderr

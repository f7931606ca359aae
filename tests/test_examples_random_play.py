"""examples/random_play.py, the README's first example as a script, through its main() as
`python examples/random_play.py ...` runs it."""

import runpy
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "random_play.py"
main = runpy.run_path(str(SCRIPT))["main"]


@pytest.mark.parametrize("game, players", [("dice", 2), ("cards", 3)])
def test_it_plays_and_reports_every_seat(capsys, game, players):
    main(["--game", game, "--players", str(players), "--games", "3", "--seed", "1"])
    out = capsys.readouterr().out
    assert "3 games of masked random play" in out
    assert all(f"player_{seat}: mean score" in out for seat in range(players))


@pytest.mark.parametrize("argv, message", [
    (["--games", "0"], "--games must be positive"),   # rendered no game, then nan scores
    (["--seed", "-1"], "--seed non-negative"),         # numpy's traceback
    (["--players", "9"], "num_players"),               # the env's traceback
    (["--game", "chess"], "invalid choice: 'chess'"),
])
def test_bad_arguments_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err

"""The value model: a finished game is certain, the seats' chances are consistent, the fit
script and the calibration benchmark run (on tiny samples)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ai_workers.bots import fit_value
from ai_workers.bots.evaluation import (
    VALUE_FIELDS,
    VALUE_WEIGHTS,
    WEIGHT_SETS,
    evaluate,
    evaluate_projection,
    scores_linear,
    seat_features,
    seat_stats,
)
from ai_workers.bots.ismcts import DEFAULT_OPTIONS
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import rollout_action
from engine_service import rules
from tests.ai.positions import mid_game_states


def _finished(seed: int, players: int = 2) -> rules.State:
    s = rules.new_game(rules.GameConfig(sets="both", players=players, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    while not s.over:
        rules.apply(s, rollout_action(s, rules.legal_actions(s), K, rnd, 0.1))
    return s


@pytest.mark.parametrize("players", [2, 3])
def test_a_finished_game_is_certain(players: int) -> None:
    s = _finished(7, players)
    K = knowledge(s.T)
    won = rules.winner(s)
    certain = [1.0 if q == won else 0.0 for q in range(players)]
    for w in WEIGHT_SETS.values():
        assert evaluate(s, K, w=w) == certain
    assert evaluate(s, K, softmax=True) == certain
    assert evaluate_projection(s, K) == certain


def test_the_two_seats_chances_sum_to_one() -> None:
    for s in mid_game_states(6):
        K = knowledge(s.T)
        p = evaluate(s, K)
        assert 0.0 < p[0] < 1.0
        assert p[0] + p[1] == pytest.approx(1.0, abs=1e-12)


def test_the_search_plays_the_value_model() -> None:
    assert DEFAULT_OPTIONS.weights == "value"
    assert WEIGHT_SETS["value"] is VALUE_WEIGHTS
    # the seat order and the seat to move are terms of the model (the fit gives them weight)
    assert VALUE_WEIGHTS.last_seat or VALUE_WEIGHTS.last_seat_end


def test_scores_are_the_fitted_terms_times_the_weights() -> None:
    """The fit and the search use the same terms: ``scores_linear`` is their dot product."""
    w = [getattr(VALUE_WEIGHTS, k) for k in VALUE_FIELDS]
    for s in mid_game_states(6):
        K = knowledge(s.T)
        stats = [seat_stats(s, q, K) for q in range(s.n)]
        got = scores_linear(s, stats, K, VALUE_WEIGHTS)
        want = [
            sum(a * b for a, b in zip(w, seat_features(s, q, stats[q], K), strict=True))
            for q in range(s.n)
        ]
        assert got == pytest.approx(want, abs=1e-9)


def test_the_fit_script_runs_on_a_tiny_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "rows.jsonl"
    fit_value.main(["--games", "5", "--bot", "ismcts@8it", "--workers", "1", "--seed", "3",
                    "--save", str(saved)])  # fmt: skip
    out = capsys.readouterr().out
    assert "held out, value model fitted on the rest" in out
    assert "fitted on all" in out
    assert all(k in out for k in VALUE_FIELDS)
    fit_value.main(["--load", str(saved), "--recent", str(saved)])
    out = capsys.readouterr().out
    assert "fitted on all" in out and "seat terms refitted on the 5 recent games" in out


def _calibration() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration.py"
    spec = importlib.util.spec_from_file_location("bench_calibration", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_calibration_benchmark_prints_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "reliability.png"
    _calibration().main(["--games", "2", "--bot", "ismcts@10it", "--iterations", "16",
                         "--workers", "1", "--plot", str(png), "--json"])  # fmt: skip
    out = capsys.readouterr().out
    for text in ("Brier", "baseline", "first  seat", "second seat", "ECE", "third 1", "targets"):
        assert text in out
    assert png.read_bytes().startswith(b"\x89PNG")


def test_calibration_figures_on_known_rows() -> None:
    cal = _calibration()
    rows = [
        {"game": g, "seat": q, "order": q, "turn": t, "chance": c, "lead": 0, "taken": 0.0,
         "won": int(q == 1), "third": t % 3}
        for g in range(4) for q, c in ((0, 0.3), (1, 0.7)) for t in (1, 2, 3)
    ]  # fmt: skip
    out = cal.figures(rows)
    assert out["brier"] == pytest.approx(0.09)
    assert [x["ece"] for x in out["seats"]] == pytest.approx([0.3, 0.3])
    assert out["seats"][1]["games_won"] == 1.0
    assert out["baseline_brier"] < 0.25  # seat order alone predicts these games


def test_resampling_counts_the_samples_that_meet_each_target() -> None:
    """Drawn samples of games: chances that are exactly right in every game meet the ECE and
    first-third targets on every draw; chances that say the loser wins meet none of them."""
    cal = _calibration()

    def rows(right: bool) -> list[dict[str, object]]:
        return [
            {"game": g, "seat": q, "order": q, "turn": t, "lead": 0, "taken": 0.0, "third": t % 3,
             "won": int(q == g % 2), "chance": float((q == g % 2) == right)}
            for g in range(10) for q in (0, 1) for t in (1, 2, 3)
        ]  # fmt: skip

    good = cal.resample(rows(True), draws=20, games=6, seed=1)
    assert good["draws"] == 20 and good["pool"] == 10
    assert good["met"]["ece_per_seat_at_most_0.05"] == 1.0
    assert good["met"]["first_third_at_most_0.225"] == 1.0
    assert good["worst_seat_ece_p90"] == 0.0
    bad = cal.resample(rows(False), draws=20, games=6, seed=1)
    assert bad["met"]["ece_per_seat_at_most_0.05"] == 0.0 and bad["met"]["all three"] == 0.0
    assert bad["worst_seat_ece_median"] == 1.0


def test_held_out_scores_each_file_with_the_scaling_fitted_on_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three samples where the second seat wins more: each is scored with the weights of the
    other two, which learned that seat's edge (c > 0) from games the sample does not hold."""
    cal = _calibration()
    rng = random.Random(5)
    files = []
    for k in range(3):
        rows = []
        for g in range(40):
            won_second = rng.random() < 0.7
            for t in (1, 2, 3, 4):
                for q in (0, 1):
                    p = rng.uniform(0.3, 0.7)
                    rows.append({"game": 1000 * k + g, "seat": q, "order": q, "turn": t,
                                 "chance": p, "lead": 0, "taken": t / 5, "third": (t - 1) * 3 // 4,
                                 "won": int((q == 1) == won_second)})  # fmt: skip
        f = tmp_path / f"rows-{k}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
        files.append(str(f))
    results = cal.held_out(files)
    assert [f for f, _, _ in results] == files
    assert all(c > 0.3 for _, (_, _, c), _ in results)  # the second seat's edge, learned
    cal.main(["--load", *files, "--held-out"])
    out = capsys.readouterr().out
    assert "each of 3 files scored with the scaling fitted on the others" in out
    assert "targets met: brier_15pct_below_baseline" in out
    with pytest.raises(SystemExit):
        cal.main(["--load", files[0], "--held-out"])

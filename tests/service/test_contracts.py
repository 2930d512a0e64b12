"""Fast checks of what others build against: stubs in sync with proto/, the API package free
of the rules core, the configuration table complete."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine_service import proto_gen
from engine_service.server import config

ROOT = Path(__file__).resolve().parents[2]


def test_committed_stubs_match_the_protos() -> None:
    out = subprocess.run([sys.executable, "-m", "engine_service.proto_gen", "--check"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_drift_is_reported() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = proto_gen.generate(Path(tmp))
    assert proto_gen.check(files) == []
    changed = dict(files)
    path = "ascension/v1/game_pb2.py"
    changed[path] = changed[path].replace("GameView", "GameVue")
    del changed["ascension/v1/engine_pb2_grpc.pyi"]
    problems = proto_gen.check(changed)
    assert any(p.startswith("differs: engine_service/api/ascension/v1/game_pb2.py") for p in problems)
    assert any("not generated" in p and "engine_pb2_grpc.pyi" in p for p in problems)


def test_api_package_does_not_import_the_rules() -> None:
    code = ("import sys; from engine_service.api.ascension.v1 import engine_pb2, engine_pb2_grpc, game_pb2; "
            "print([m for m in sys.modules if m.startswith('engine_service.rules')])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_every_setting_is_documented() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    for opt in config.OPTIONS:
        assert f"`{opt.env}`" in doc and f"`{config.flag_name(opt)}`" in doc, opt.env


def test_flags_win_over_environment() -> None:
    ns = argparse.Namespace(**{o.attr: None for o in config.OPTIONS})
    ns.grpc_port = 6000
    s = config.load({"ENGINE_GRPC_PORT": "5000", "REDIS_URL": "redis://x:1/0"}, ns)
    assert s.grpc_port == 6000 and s.redis_url == "redis://x:1/0" and s.dispatch_mode == "celery"
    assert config.load({}).dispatch_mode == "local"
    with pytest.raises(ValueError, match="ENGINE_AI_DISPATCH"):
        config.load({"ENGINE_AI_DISPATCH": "celery"})

"""Per-role configuration (YAML) and the client factory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import evolver_gym.core.llm as llm
from evolver_gym.core.llm import ROLES, LLMConfig, RolesConfig, build_clients
from evolver_gym.core.llm.testing import build_tiny_chat_model


def test_yaml_roles_merge_defaults_and_talk_to_the_server(llm_server, tmp_path):
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump({
        "defaults": {"base_url": llm_server.url, "model": "base-model", "api_key": "k", "temperature": 0.4},
        "roles": {"judge": {"temperature": 0.0, "model": "judge-model"}, "explorer": {"temperature": 1.0}},
    }))
    clients = build_clients(path)
    llm_server.push("j", "e", "s")
    clients.client_for("judge").chat([{"role": "user", "content": "a"}])
    clients["explorer"].chat([{"role": "user", "content": "b"}])
    clients.client_for("summarizer").chat([{"role": "user", "content": "c"}])
    sent = [(r["model"], r["temperature"]) for r in llm_server.requests]
    assert sent == [("judge-model", 0.0), ("base-model", 1.0), ("base-model", 0.4)]
    stats = clients.stats()
    assert set(stats) == {"judge", "explorer", "summarizer"}
    assert all(s["calls"] == 1 for s in stats.values())
    assert clients.client_for("judge") is clients.client_for("judge")


def test_example_yaml_shipped_with_the_package_is_valid():
    example = Path(llm.__file__).with_name("roles.example.yaml")
    config = RolesConfig.from_yaml(example)
    assert set(config.roles) == set(ROLES)
    assert config.for_role("judge").temperature == 0.0


def test_bad_roles_and_keys_are_named():
    with pytest.raises(ValueError, match="'jduge'"):
        RolesConfig.from_dict({"roles": {"jduge": {}}})
    with pytest.raises(ValueError, match="max_token"):
        RolesConfig.from_dict({"roles": {"judge": {"max_token": 5}}})
    with pytest.raises(ValueError, match="'nonsense'"):
        build_clients({}).client_for("nonsense")
    with pytest.raises(ValueError, match="no policy"):
        build_clients({"roles": {"arena": {"backend": "policy"}}}).client_for("arena")


def test_policy_backend_from_config():
    model, tok = build_tiny_chat_model()
    clients = build_clients({"roles": {"arena": {"backend": "policy", "max_tokens": 3, "temperature": 0.0}}},
                            policy=(model, tok))
    client = clients.client_for("arena")
    assert isinstance(client, llm.PolicyChatClient)
    assert isinstance(client.chat([{"role": "user", "content": "hi"}]), str)
    assert clients.stats()["arena"]["calls"] == 1


def test_llmconfig_replace_validates():
    cfg = LLMConfig(model="m")
    assert cfg.replace(temperature=0.1).temperature == 0.1 and cfg.temperature == 0.7
    with pytest.raises(ValueError, match="concurrency"):
        cfg.replace(concurrency=0)

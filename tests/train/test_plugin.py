"""The mechanism plugin contract: a fourth mechanism registers, gets its own options and trains, with no
edit of the trainer; info keys are respected end to end."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import gymnasium as gym
import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_train.envs import build_training_environment  # noqa: E402
from evolver_train.train_cli import parse_config  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402
from wrappers.plugin import Attachment, Mechanism, TrainingHooks, register_mechanism, unregister_mechanism  # noqa: E402

from .fixtures import ENV_ID, GuessEnv, tiny_policy  # noqa: E402


@dataclass
class VisitConfig:
    """A user's mechanism: counts visits, adds a bonus step reward for valid guesses."""

    _argument_group_name = "visits (wrappers: visits)"

    visits_bonus: float = field(default=1.0, metadata={"help": "Step reward of a valid guess."})
    visits_info_key: str = field(default="visits", metadata={"help": "The info key written."})


class VisitWrapper(gym.Wrapper):
    def __init__(self, env, key):
        super().__init__(env)
        self.key, self.valid = key, []

    def reset(self, *, seed=None, options=None):
        options = dict(options or {})
        self.tagged = bool(options.pop("visit_tag", False))
        obs, info = self.env.reset(seed=seed, options=options)
        self.valid = []
        info[self.key] = {"tagged": self.tagged}
        return obs, info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.valid.append(bool(info.get("action_valid", True)))
        info[self.key] = {"tagged": self.tagged, "valid": list(self.valid)}
        return obs, r, term, trunc, info


class VisitState:
    def __init__(self):
        self.episodes = 0

    def state_dict(self):
        return {"episodes": self.episodes}

    def load_state_dict(self, state):
        self.episodes = state["episodes"]


def attach_visits(config: VisitConfig, run) -> Attachment:
    state = VisitState()

    def on_episodes(trajectories):
        state.episodes += len(trajectories)
        return {"visits/episodes": float(len(trajectories))}

    hooks = TrainingHooks(
        name="visits",
        reset_options=lambda row: {"visit_tag": row.index == 0},
        step_rewards=lambda info: [config.visits_bonus if v else -config.visits_bonus
                                   for v in info.get(config.visits_info_key, {}).get("valid", [])] or None,
        step_reward_weight=lambda step: 0.5,
        on_episodes=on_episodes,
        episode_metrics=lambda eps: {"visits/tagged_rate": sum(r[config.visits_info_key]["tagged"]
                                                                for r, _ in eps) / len(eps)},
        stateful={"visits": state})
    return Attachment(layer=lambda env: VisitWrapper(env, config.visits_info_key), hooks=hooks,
                      services={"visit_state": state})


@pytest.fixture
def visits():
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=GuessEnv)
    mechanism = register_mechanism(Mechanism("visits", VisitConfig, attach_visits))
    yield mechanism
    unregister_mechanism("visits")


def test_a_fourth_mechanism_plugs_in_without_editing_the_trainer(tmp_path, visits):
    run = parse_config(["--model_name_or_path", "tiny", "--env-id", ENV_ID, "--output_dir", str(tmp_path / "out"),
                        "--wrappers", "visits", "--visits_bonus", "2.0", "--visits_info_key", "my_visits",
                        "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_steps", "2",
                        "--max-turns", "3", "--max-episode-tokens", "120", "--max-turn-tokens", "6",
                        "--report_to", "none", "--save_strategy", "no", "--disable_tqdm", "true",
                        "--learning_rate", "0.05"])
    assert run.mechanisms["visits"] == VisitConfig(visits_bonus=2.0, visits_info_key="my_visits")
    built = build_training_environment(run.train, run.mechanisms)
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, tasks=built.train_tasks, hooks=built.hooks,
                                 processing_class=tok)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert logs[0]["visits/tagged_rate"] == 0.25  # one rollout of each group of 4, as its hook asked
    assert logs[0]["visits/episodes"] == 8.0 and built.services["visit_state"].episodes == 16
    assert logs[0]["adv/alpha"] == 0.5 and logs[0]["adv/attribution_share"] > 0  # its step rewards were used
    assert trainer.plugin_state_dict()["hooks"]["visits"] == {"episodes": 16}
    assert trainer.plugin_state["totals"]["visits/episodes"] == 16.0


def test_info_keys_are_respected_by_every_mechanism(tmp_path):
    """Renamed info keys: attribution labels still drive ADCA, experience is still read."""
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=GuessEnv)
    run = parse_config(["--model_name_or_path", "tiny", "--env-id", ENV_ID, "--output_dir", str(tmp_path / "out"),
                        "--wrappers", "navigation", "attribution",
                        "--attribution-info-key", "credit", "--attributor", "rules", "--attribution-alpha", "0.3",
                        "--experience-info-key", "memo", "--experience-share", "0.5",
                        "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_steps", "1",
                        "--max-turns", "4", "--max-episode-tokens", "200", "--max-turn-tokens", "6",
                        "--report_to", "none", "--save_strategy", "no", "--disable_tqdm", "true"])
    built = build_training_environment(run.train, run.mechanisms)
    env = built.env_factory()
    obs, info = env.reset(seed=0, options={"task": GuessEnv().tasks()[0], "experience": False})
    assert "memo" in set(info) and "experience" not in info
    for _ in range(4):
        obs, r, term, trunc, info = env.step("guess[0]")
        if term or trunc:
            break
    assert "credit" in info and "attribution" not in info
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, tasks=built.train_tasks, hooks=built.hooks,
                                 processing_class=tok)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    # read through the renamed key, for every episode (those the trainer cuts are labelled by its hook)
    assert logs[0]["attr/labelled_rate"] == 1.0 and logs[0]["adv/attribution_share"] > 0
    assert logs[0]["exp/injection_rate"] == 0.0  # the pool is empty: nothing to inject yet
    assert "attr/good_rate" in logs[0]


def test_questioning_writes_its_renamed_info_key(tmp_path):
    from wrappers.questioning import QuestioningPayload, SelfQuestioning, TaskPool

    pool = TaskPool(str(tmp_path / "pool.sqlite"))
    pool.add_many(GuessEnv().tasks())
    env = SelfQuestioning(GuessEnv(), pool, info_key="origin_of_task")
    with pytest.raises(gym.error.ResetNeeded):
        env.step("guess[1]")
    _, info = env.reset(seed=0)
    payload = QuestioningPayload.from_info(info, "origin_of_task")
    assert payload.origin == "seed" and payload.task_id in pool and "questioning" not in info


def test_a_mechanism_name_is_registered_once(visits):
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism(Mechanism("visits", VisitConfig, attach_visits))
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism(Mechanism("navigation", VisitConfig, attach_visits))


def test_experience_context_needs_reset_before_step_and_writes_its_info_key(tmp_path):
    from wrappers.navigation import Experience, ExperienceContext, ExperiencePayload, ExperiencePool

    pool = ExperiencePool(uri=str(tmp_path / "p.db"), threshold=-1.0)
    pool.add([Experience(when_to_use="find the number", content="guess in the middle", env_id=ENV_ID)])
    env = ExperienceContext(GuessEnv(), pool, info_key="memo", filter_env=False)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("guess[1]")
    obs, info = env.reset(seed=0, options={"task": GuessEnv().tasks()[3]})
    payload = ExperiencePayload.from_info(info, "memo")
    assert payload.used and "experience" not in info and obs.startswith(payload.text)
    _, _, _, _, info = env.step("guess[3]")
    assert ExperiencePayload.from_info(info, "memo") == payload
    pool.close()



def test_episodes_the_trainer_cuts_are_recorded_as_failures_in_the_curriculum(tmp_path):
    """Two turns never finish a WebShop purchase: the trainer's turn cap ends every episode before the env
    does, so the questioning layer never sees one end. The trainer's hook records each as a failure."""
    import json

    from evolver_train.train_cli import main as train
    from wrappers.questioning import TaskPool

    pool_path = tmp_path / "pool.sqlite"
    shop = {"num_products": 200, "max_steps": 8, "goals": "synthetic", "split_scheme": "product"}
    rc = train(["--model_name_or_path", "tiny", "--env-kwargs", json.dumps(shop), "--output_dir", str(tmp_path / "out"),
                "--wrappers", "questioning", "--questioning-pool", str(pool_path),
                "--per_device_train_batch_size", "4", "--num_generations", "2", "--max_steps", "2",
                "--max-turns", "2", "--max-episode-tokens", "200", "--max-turn-tokens", "8",
                "--evolver-eval-episodes", "0", "--report_to", "none", "--save_strategy", "no"])
    assert rc == 0
    pool = TaskPool(str(pool_path))
    outcomes = [v for history in pool.histories().values() for v in history]
    pool.close()
    assert outcomes == [0.0] * 8  # 2 steps x 4 episodes, each recorded once, as a failure


def test_episodes_the_trainer_cuts_are_labelled_by_the_attributor_too(tmp_path):
    """GuessEnv allows 4 guesses, the trainer's turn cap 2: the episodes it cuts never reach the
    Attribution layer's end of episode, so the trainer asks the mechanism to label them; every training
    episode then carries one label per step, and the oracle's reference labels for the agreement."""
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=GuessEnv)
    run = parse_config(["--model_name_or_path", "tiny", "--env-id", ENV_ID, "--output_dir", str(tmp_path / "out"),
                        "--wrappers", "attribution", "--attributor", "rules", "--attribution-alpha", "0.3",
                        "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_steps", "1",
                        "--max-turns", "2", "--max-episode-tokens", "200", "--max-turn-tokens", "6",
                        "--report_to", "none", "--save_strategy", "no", "--disable_tqdm", "true"])
    built = build_training_environment(run.train, run.mechanisms)
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, tasks=built.train_tasks, hooks=built.hooks,
                                 processing_class=tok)
    trainer.train()
    episodes = trainer._episodes
    cut = [ep for ep in episodes if ep.ended_by == "turn_cap"]
    assert cut  # the untrained policy rarely guesses right within 2 turns
    for ep in episodes:
        payload = ep.final_info["attribution"]
        assert payload["attributor"] == "rules" and len(payload["labels"]) == len(ep.steps)
        assert len(payload["reference"]["labels"]) == len(ep.steps)  # the oracle's, for the agreement metric
        assert ep.labels is not None and len(ep.labels) == len(ep.steps)
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert logs[0]["attr/labelled_rate"] == 1.0 and logs[0]["attr/oracle_checked_rate"] == 1.0

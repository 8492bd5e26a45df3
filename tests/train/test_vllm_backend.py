"""The vLLM path of the trainer, against an engine that stands in for vLLM (which needs a GPU).

The stand-in keeps its own copy of the weights, updated only by ``sync_weights`` like vLLM's, samples
with the model and the ``SamplingParams`` it receives (temperature, seed, max_tokens, stop ids), and
refuses to generate while asleep. So a stale engine, an ignored temperature or seed, or a wake/sleep
per turn all show in what it records.
"""

from __future__ import annotations

import copy
import os
import sys
from types import SimpleNamespace

import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_train.config import EvolverGRPOConfig  # noqa: E402
from evolver_train.generation import VLLMGenerate, rollout_scope  # noqa: E402
from evolver_train.rollout import sample_tokens  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402

from .fixtures import GuessEnv, tiny_policy  # noqa: E402


class SamplingParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class StandInLLM:
    def __init__(self, model, tokenizer):
        self.model, self.tok = copy.deepcopy(model).eval(), tokenizer
        self.asleep, self.events, self.calls = False, [], []

    def wake_up(self, tags):
        self.events.append(("wake", tuple(tags)))
        self.asleep = False

    def sleep(self, level):
        self.events.append(("sleep", level))
        self.asleep = True

    def generate(self, prompts, sampling_params, use_tqdm=False):
        if self.asleep:
            raise RuntimeError("generate called while the engine sleeps")
        self.events.append(("generate", len(prompts)))
        self.calls.append(sampling_params)
        outs = []
        for p, sp in zip(prompts, sampling_params):
            gen = torch.Generator().manual_seed(sp.seed)
            [ids], [lps] = sample_tokens(self.model, [p["prompt_token_ids"]], [sp.max_tokens],
                                         eos_token_ids=sp.stop_token_ids, pad_token_id=self.tok.pad_token_id,
                                         temperature=sp.temperature, generator=gen)
            steps = [{t: SimpleNamespace(logprob=lp)} for t, lp in zip(ids, lps)]
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, logprobs=steps)]))
        return outs


class StandInEngine:
    """The parts of TRL's ``VLLMGeneration`` the backend uses, in colocate mode."""

    def __init__(self, policy, tokenizer, sleep_mode=False):
        self.policy, self.llm = policy, StandInLLM(policy, tokenizer)
        self.mode, self.tensor_parallel_size, self.generation_kwargs = "colocate", 1, {}
        self.enable_sleep_mode, self._llm_weights_sleeping = sleep_mode, False
        self.syncs = 0
        self.stale_generations = 0
        original = self.llm.generate

        def checked(prompts, sampling_params, use_tqdm=False):  # weights equal to the policy's right now?
            live = self.policy.state_dict()
            if any(not torch.equal(v, live[k]) for k, v in self.llm.model.state_dict().items()):
                self.stale_generations += 1
            return original(prompts, sampling_params, use_tqdm)
        self.llm.generate = checked

    def sync_weights(self):
        if self.enable_sleep_mode:
            self.llm.wake_up(tags=["weights"])
            self._llm_weights_sleeping = False
        self.llm.model.load_state_dict(self.policy.state_dict())
        self.syncs += 1


def _trainer(tmp_path, sleep_mode=False):
    model, tok = tiny_policy()
    cfg = EvolverGRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                            max_steps=2, learning_rate=5e-2, max_turns=3, max_episode_tokens=120, max_turn_tokens=6,
                            report_to="none", save_strategy="no", rollout_seed=3, disable_tqdm=True, temperature=1.0,
                            evolver_eval_episodes=2, evolver_eval_interval=1, evolver_eval_temperature=0.25)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=GuessEnv().tasks()[:2], processing_class=tok,
                                 eval_tasks=GuessEnv().tasks()[5:7])
    # What GRPOTrainer sets up with use_vllm=True, with the stand-in in place of vLLM.
    trainer.use_vllm, trainer.vllm_mode = True, "colocate"
    trainer.vllm_generation = StandInEngine(trainer.model, tok, sleep_mode=sleep_mode)
    trainer._last_loaded_step = -1
    return trainer


def test_training_and_every_evaluation_generate_on_current_weights(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=SamplingParams))
    trainer = _trainer(tmp_path)
    engine = trainer.vllm_generation
    trainer.train()
    after = trainer.evaluate_episodes(trainer.eval_tasks)  # after train(): one step past the last sync
    assert 0.0 <= after["success_rate"] <= 1.0
    assert engine.stale_generations == 0
    assert engine.syncs >= 3  # 2 training rollouts; evaluations after step 1 and after train() re-sync
    temperatures = {sp.temperature for call in engine.llm.calls for sp in call}
    assert temperatures == {1.0, 0.25}  # training at the training temperature, evaluation at its own
    seeds = [sp.seed for sp in engine.llm.calls[0]]
    assert len(set(seeds)) == len(seeds)  # the G rows of a group share a prompt, never a seed


def test_sleep_mode_wakes_once_per_rollout_not_per_turn(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=SamplingParams))
    trainer = _trainer(tmp_path, sleep_mode=True)
    engine = trainer.vllm_generation
    engine._llm_weights_sleeping, engine.llm.asleep = True, True
    trainer.evaluate_episodes(trainer.eval_tasks)
    kinds = [e[0] for e in engine.llm.events]
    assert kinds.count("generate") >= 2  # several turns
    assert kinds[0] == "wake" and kinds[-1] == "sleep"
    assert kinds.count("sleep") == 1 and kinds.count("wake") == 2  # weights + kv cache, once
    assert engine.syncs == 1 and engine.stale_generations == 0


def test_same_seed_same_samples_and_temperature_reaches_the_engine():
    model, tok = tiny_policy()
    engine = StandInEngine(model, tok)
    trainer = SimpleNamespace(vllm_generation=engine, state=SimpleNamespace(global_step=4), _last_loaded_step=4)
    contexts = [tok("guess a number", add_special_tokens=False)["input_ids"]] * 4

    def run(seed, temperature):
        gen = VLLMGenerate(trainer, temperature=temperature, seed=seed, eos_token_ids=[tok.eos_token_id],
                           sampling_params_cls=SamplingParams)
        with rollout_scope(gen):
            return gen(contexts, [6] * 4)

    a, b, c = run(1, 1.0), run(1, 1.0), run(2, 1.0)
    assert a == b and a != c
    greedy_ids, _ = run(5, 0.0)
    assert all(ids == greedy_ids[0] for ids in greedy_ids)  # temperature 0: argmax, whatever the seed
    assert engine.llm.calls[-1][0].temperature == 0.0 and engine.syncs == 0  # weights current: no sync

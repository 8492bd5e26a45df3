"""Token-exact multi-turn rollouts: sampled ids kept, observation deltas appended, no re-tokenising."""

from __future__ import annotations

import torch

from evolver_train.rollout import ChatCodec, PromptEdit, RowSpec, play_episodes, sample_tokens
from wrappers.navigation import ExperiencePayload, NavigationConfig
from wrappers.navigation.plugin import training_hooks

from .fixtures import GuessEnv, HintWrapper, tiny_policy


def _recording_generate(model, tok, seed=0, temperature=1.0):
    calls = []
    gen = torch.Generator().manual_seed(seed)

    def generate(contexts, caps):
        ids, lps = sample_tokens(model, contexts, caps, eos_token_ids=[tok.eos_token_id],
                                 pad_token_id=tok.pad_token_id, temperature=temperature, generator=gen)
        calls.append(([list(c) for c in contexts], [list(x) for x in ids]))
        return ids, lps
    return generate, calls


def _play(rows, envs, generate, codec, **kw):
    params = dict(max_turns=4, max_episode_tokens=200, max_turn_tokens=6)
    params.update(kw)
    return play_episodes(envs, rows, generate, codec, **params)


def test_token_record_is_sampled_ids_plus_template_deltas():
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    tasks = GuessEnv().tasks()[3:6]  # distinct prompts, so each sampler context names its episode
    rows = [RowSpec(task=t.to_dict(), seed=11, group=i) for i, t in enumerate(tasks)]
    envs = [GuessEnv() for _ in rows]
    generate, calls = _recording_generate(model, tok)
    episodes = _play(rows, envs, generate, codec)
    # Every context passed to the sampler extends the previous one of the same episode (prefix extension).
    for ep in episodes:
        rec = ep.tokens
        assert len(rec.completion_ids) == len(rec.env_mask) == len(rec.step_ids) == len(rec.logprobs)
        assert rec.completion_ids[-1] == tok.eos_token_id  # completions end with EOS
        turn_contexts = []
        for contexts, _ in calls:
            turn_contexts += [c for c in contexts if c[: len(rec.prompt_ids)] == rec.prompt_ids]
        full = rec.prompt_ids + rec.completion_ids
        # Rebuild the completion from what the sampler returned and the codec's observation deltas.
        pos, turn = 0, 0
        for _ in ep.steps:
            model_ids = [t for t, m, s in zip(rec.completion_ids, rec.env_mask, rec.step_ids) if s == turn and m == 1]
            assert rec.completion_ids[pos: pos + len(model_ids)] == model_ids
            pos += len(model_ids)
            if model_ids[-1] != tok.eos_token_id:  # cut by the per-turn cap: EOS appended as env token
                assert rec.completion_ids[pos] == tok.eos_token_id and rec.env_mask[pos] == 0
                pos += 1
            turn += 1
            if turn < len(ep.steps):
                delta = codec.observation_ids(ep.steps[turn].observation)
                assert rec.completion_ids[pos: pos + len(delta)] == delta
                assert set(rec.env_mask[pos: pos + len(delta)]) == {0}
                assert set(rec.step_ids[pos: pos + len(delta)]) == {-1}
                pos += len(delta)
        assert pos == len(rec.completion_ids)
        assert len(turn_contexts) == len(ep.steps)  # one generation context per turn
        for a, b in zip(turn_contexts, turn_contexts[1:]):
            assert b[: len(a)] == a
        assert all(full[: len(c)] == c for c in turn_contexts)


def test_sampled_ids_survive_a_non_canonical_tokenisation():
    """The model may sample ids whose decode re-encodes differently; the record keeps the sampled ids."""
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    # "guess" spelled letter by letter decodes to "guess[4]", which re-encodes as one "guess" token.
    odd = tok.convert_tokens_to_ids(list("guess") + ["[", "4", "]"]) + [tok.eos_token_id]
    assert tok.decode(odd[:-1]) == "guess[4]"
    assert tok("guess[4]", add_special_tokens=False)["input_ids"] != odd[:-1]

    def generate(contexts, caps):
        return [list(odd) for _ in contexts], [[-1.0] * len(odd) for _ in contexts]

    task = GuessEnv().tasks()[4]
    (ep,) = _play([RowSpec(task=task.to_dict(), seed=0)], [GuessEnv()], generate, codec)
    assert ep.success and ep.steps[0].action == "guess[4]"
    n = len(odd)
    assert ep.tokens.completion_ids == odd and ep.tokens.env_mask == [1] * n and ep.tokens.logprobs == [-1.0] * n


def test_full_record_matches_the_chat_template_rendering():
    model, tok = tiny_policy()
    codec = ChatCodec(tok, system_prompt="you play a game")
    task = GuessEnv().tasks()[7]
    script = iter([["guess[2]"], ["guess[9]"], ["guess[7]"]])

    def generate(contexts, caps):
        text = next(script)[0]
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return [ids for _ in contexts], [[0.0] * len(ids) for _ in contexts]

    (ep,) = _play([RowSpec(task=task.to_dict(), seed=0)], [GuessEnv()], generate, codec)
    assert ep.success and len(ep.steps) == 3
    messages = [{"role": "system", "content": "you play a game"}]
    for s in ep.steps:
        messages += [{"role": "user", "content": s.observation}, {"role": "assistant", "content": s.action}]
    rendered = tok(tok.apply_chat_template(messages, tokenize=False), add_special_tokens=False)["input_ids"]
    assert ep.tokens.prompt_ids + ep.tokens.completion_ids == rendered


def test_group_resets_identically_and_budget_truncates():
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    task = GuessEnv().tasks()[1]
    rows = [RowSpec(task=task.to_dict(), seed=5, group=0) for _ in range(4)]
    generate, _ = _recording_generate(model, tok, seed=3)
    episodes = _play(rows, [GuessEnv() for _ in rows], generate, codec, max_episode_tokens=12, max_turn_tokens=8)
    assert len({tuple(ep.tokens.prompt_ids) for ep in episodes}) == 1
    for ep in episodes:
        assert len(ep.tokens.completion_ids) <= 12
        assert ep.tokens.completion_ids[-1] == tok.eos_token_id
        assert ep.truncated or ep.terminated


def test_experience_span_stripped_from_training_prompt_only():
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    task = GuessEnv().tasks()[2]
    rows = [RowSpec(task=task.to_dict(), seed=1, experience=True),
            RowSpec(task=task.to_dict(), seed=1, experience=False)]
    generate, calls = _recording_generate(model, tok)
    hooks = training_hooks(NavigationConfig(experience_share=0.5, experience_mode="strip"))
    edit = PromptEdit(hooks.plain_observation, hooks.train_on_plain_observation, hooks.clip_high)
    with_exp, without = _play(rows, [HintWrapper(GuessEnv()), HintWrapper(GuessEnv())], generate, codec,
                              prompt_edits=[edit])
    assert with_exp.stripped and ExperiencePayload.from_info(with_exp.reset_info).used and not without.stripped
    assert with_exp.clip_high == 0.6 and without.clip_high is None
    assert with_exp.train_prompt_ids == without.train_prompt_ids  # stripped context == plain context
    assert with_exp.tokens.prompt_ids != with_exp.train_prompt_ids  # it was sampled with the experience
    assert calls[0][0][0] == with_exp.tokens.prompt_ids
    assert with_exp.anchors[0] == without.anchors[0]  # the anchor state ignores the injected block


def test_sample_tokens_logprobs_match_a_teacher_forced_forward():
    model, tok = tiny_policy()
    model.eval()
    contexts = [[tok.convert_tokens_to_ids("<|user|>"), 20, 21], [tok.convert_tokens_to_ids("<|user|>"), 30]]
    ids, lps = sample_tokens(model, contexts, [5, 3], eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                             temperature=0.7, generator=torch.Generator().manual_seed(0))
    assert [len(x) for x in ids] == [len(x) for x in lps]
    assert len(ids[0]) <= 5 and len(ids[1]) <= 3
    for c, s, lp in zip(contexts, ids, lps):
        full = torch.tensor([c + s])
        with torch.no_grad():
            logits = model(full).logits[0, len(c) - 1: -1] / 0.7
        ref = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(s).unsqueeze(1)).squeeze(1)
        torch.testing.assert_close(torch.tensor(lp), ref, atol=1e-4, rtol=1e-4)


def test_incremental_sampler_multi_turn_logprobs_match_a_teacher_forced_forward():
    """Cache reuse across turns (finished rows kept as masked holes) changes no log-prob."""
    from evolver_train.rollout import IncrementalSampler

    model, tok = tiny_policy()
    model.eval()
    codec = ChatCodec(tok)
    tasks = GuessEnv().tasks()[:5]
    rows = [RowSpec(task=t.to_dict(), seed=3, group=i) for i, t in enumerate(tasks)]
    sampler = IncrementalSampler(model, eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                                 temperature=0.8, generator=torch.Generator().manual_seed(1))
    episodes = _play(rows, [GuessEnv() for _ in rows], sampler, codec, max_turns=4, max_turn_tokens=5)
    assert sampler.cache is not None and max(len(ep.steps) for ep in episodes) > 1
    lengths = {len(ep.steps) for ep in episodes}
    assert len(lengths) > 1 or min(lengths) > 1  # rows finish at different turns, or several turns each
    for ep in episodes:
        rec = ep.tokens
        full = torch.tensor([rec.prompt_ids + rec.completion_ids])
        with torch.no_grad():
            logits = model(full).logits[0, len(rec.prompt_ids) - 1: -1] / 0.8
        ref = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(rec.completion_ids).unsqueeze(1)).squeeze(1)
        model_pos = [k for k, m in enumerate(rec.env_mask) if m]
        torch.testing.assert_close(torch.tensor([rec.logprobs[k] for k in model_pos]), ref[model_pos],
                                   atol=1e-4, rtol=1e-4)


def test_an_episode_cut_by_the_trainer_is_finished_with_its_outcome():
    """finish_cut (what the mechanisms write for a cut episode) reads the episode's success and score."""
    class PartialCredit(GuessEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, terminated, truncated, {**info, "score": 0.25}

    model, tok = tiny_policy()
    rows = [RowSpec(task=GuessEnv().tasks()[7].to_dict(), seed=5, group=0) for _ in range(2)]
    generate, _ = _recording_generate(model, tok, seed=1)
    finished = []
    episodes = _play(rows, [PartialCredit() for _ in rows], generate, ChatCodec(tok), max_turns=1,
                     finish_cut=lambda t: finished.append((t.success, t.score)) or {})
    assert all(ep.ended_by == "turn_cap" for ep in episodes)
    assert finished == [(ep.success, ep.score) for ep in episodes] == [(False, 0.25)] * 2

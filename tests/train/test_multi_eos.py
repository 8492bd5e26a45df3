"""A turn ends on any of the model's EOS ids, not only on the tokenizer's EOS."""

from __future__ import annotations

from evolver_train.rollout import ChatCodec, RowSpec, play_episodes

from .fixtures import GuessEnv, tiny_policy


def _scripted(action_ids: list[int], stop_id: int):
    """Stands in for a model that writes ``action_ids`` and stops on ``stop_id`` every turn."""
    def generate(contexts, caps):
        return [action_ids + [stop_id] for _ in contexts], [[-0.5] * (len(action_ids) + 1) for _ in contexts]
    return generate


def test_secondary_eos_closes_the_turn_without_an_appended_eos():
    _, tok = tiny_policy()
    secondary = tok.convert_tokens_to_ids("<|end|>")
    assert secondary != tok.eos_token_id
    action = tok("guess[2]", add_special_tokens=False)["input_ids"]
    codec = ChatCodec(tok, eos_token_ids=[tok.eos_token_id, secondary])
    task = GuessEnv().tasks()[7]  # target 7: the guess 2 is wrong, so the episode has several turns
    [ep] = play_episodes([GuessEnv(max_steps=3)], [RowSpec(task=task.to_dict(), seed=0)], _scripted(action, secondary),
                         codec, max_turns=3, max_episode_tokens=400, max_turn_tokens=16)
    rec = ep.tokens
    assert [s.action for s in ep.steps] == ["guess[2]"] * 3
    first_turn = [t for t, s in zip(rec.completion_ids, rec.step_ids) if s == 0]
    assert first_turn == action + [secondary]  # what the model sampled, trained as model tokens
    after = rec.completion_ids[len(first_turn)]
    assert after != tok.eos_token_id and rec.completion_ids[: len(first_turn) + 1].count(tok.eos_token_id) == 0
    # The observation delta follows the sampled stop token directly, no EOS the model never wrote.
    delta = codec.observation_ids(ep.steps[1].observation)
    assert rec.completion_ids[len(first_turn): len(first_turn) + len(delta)] == delta
    assert sum(rec.env_mask) == 3 * len(first_turn)  # every model token, no appended ones counted as model
    assert rec.completion_ids[-1] == secondary and rec.env_mask[-1] == 1


def test_codec_always_counts_the_tokenizer_eos():
    _, tok = tiny_policy()
    assert ChatCodec(tok).eos_token_ids == {tok.eos_token_id}
    assert ChatCodec(tok, eos_token_ids=[5]).eos_token_ids == {tok.eos_token_id, 5}

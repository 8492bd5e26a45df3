"""The offline default policy: a word-level tokenizer built locally and a small transformer from a config.

* ``build_word_tokenizer`` - a ``PreTrainedTokenizerFast`` over the words of an environment's texts,
  with a chat template; one token per word, while digits, punctuation and every word mixing letters
  and digits (product ids, ``z2-pink``, ``3oz``) are split into characters. With ``whole_word_texts``,
  only the words of those texts are whole tokens; any other word is made of the longest known pieces,
  down to single letters.
* ``environment_texts`` / ``build_environment_tokenizer`` - that tokenizer for an environment (the one
  code path of ``evolver sft`` and ``evolver train``).
* ``build_tiny_policy`` - a Llama-style causal LM built from a config (no download).
* ``load_policy`` - a model and its tokenizer from a checkpoint folder or a Hugging Face name.
* ``build_policy`` - the one model/tokenizer builder of ``evolver sft``, ``train`` and ``eval``: ``tiny``
  built for an environment, a LoRA adapter folder merged onto its base, or a checkpoint / hub name.
* ``TinyPolicyConfig`` - the size of the default policy.

Nothing here reaches a model hub: the default policy is built from a config, and its tokenizer
from the environment's own vocabulary, so a checkpoint folder is self-contained. A real model
(``Qwen/Qwen2.5-0.5B-Instruct`` or a local path) goes through :func:`load_policy` unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TinyPolicyConfig", "build_word_tokenizer", "environment_texts", "build_environment_tokenizer",
           "build_tiny_policy", "load_policy", "build_policy", "CHAT_TEMPLATE"]

SPECIAL_TOKENS = ["<pad>", "<unk>", "<bos>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

# A turn is "<|role|>content<|end|>"; an assistant turn ends with EOS instead, so a sampled action
# stops at EOS and the next observation is appended after it as "<|user|>...<|end|><|assistant|>".
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{{ '<|' + m['role'] + '|>' + m['content'] }}"
    "{% if m['role'] == 'assistant' %}{{ eos_token }}{% else %}{{ '<|end|>' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

# Words keep a leading "▁" when a space preceded them, so decoding restores the text exactly.
# WebShop's "[SEP]" separator is one token: it appears dozens of times on a results page.
# A run of letters is one token only when no letter or digit touches it; anything mixing letters and
# digits (a product id such as "b0868kf3zb") is spelled one character a token. A product id is then
# made of pieces every product shares, so the policy can copy the id of a product it never trained on
# (one token per id left an unseen product's id with an untrained embedding: 2% success on them).
_PIECES_SPELLED = r"▁?\[sep\]|▁?(?<![a-z0-9])[a-z]+(?![a-z0-9])|▁?[a-z0-9]|▁?[^\sa-z0-9▁]|▁"
# The first tokenizer's pieces (``spell_ids=False``): one token per WebShop product id, kept for recipes
# measured with it (the quickstart).
_PIECES_WHOLE_IDS = r"▁?\[sep\]|▁?[0-9]|▁?b0[a-z0-9]{8}|▁?[a-z]+|▁?[^\sa-z0-9▁]|▁"


def _pre_tokenizer(spell_ids: bool = True):
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never"),
        pre_tokenizers.Split(Regex(_PIECES_SPELLED if spell_ids else _PIECES_WHOLE_IDS), behavior="isolated"),
    ])


def build_word_tokenizer(texts: Iterable[str], *, min_frequency: int = 1, extra_words: Iterable[str] = (),
                         spell_ids: bool = True, whole_word_texts: Iterable[str] | None = None):
    """A word-level tokenizer whose vocabulary is every piece of ``texts`` (lower-cased).

    ``spell_ids``: words mixing letters and digits (product ids) are spelled one character a token, so
    unseen ids are made of trained pieces; ``False`` keeps one token per WebShop product id.

    ``whole_word_texts``: when given, only the words of these texts (and ``extra_words``) are whole
    tokens; ``texts`` add their single characters only. A word outside the vocabulary is then not
    ``<unk>`` but the longest known pieces, left to right, down to single letters ("bookcases" is
    ``▁book`` + ``cases``, or spelled), so a word the training data never shows is made of trained
    tokens: the policy can copy it from the instruction into a search.

    Example:
        >>> tok = build_word_tokenizer(["search[red shoes]", "click[b0868kf3zb]"])
        >>> ids = tok("search[red shoes]")["input_ids"]
        >>> tok.decode(ids)
        'search[red shoes]'
    """
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency!r}")
    normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    pre = _pre_tokenizer(spell_ids)

    def pieces(text: str) -> list[str]:
        return [piece for piece, _ in pre.pre_tokenize_str(normalizer.normalize_str(text))]

    counts: Counter[str] = Counter()
    for text in [*(texts if whole_word_texts is None else whole_word_texts), *extra_words]:
        counts.update(pieces(text))
    # Every digit and ASCII punctuation mark, with and without a leading space, is always known.
    basics = ([c for c in "0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"] + list("abcdefghijklmnopqrstuvwxyz")
              + ["[sep]"])
    if whole_word_texts is not None:  # the other texts add their characters (an accented letter), so no <unk>
        basics += sorted({c for text in texts for piece in pieces(text) for c in piece.lstrip("▁")})
    # A word can follow a space or not ("search[red" vs "a red"): both variants are in the vocabulary.
    bare = {w.lstrip("▁") for w, c in counts.items() if c >= min_frequency} | set(basics)
    words = sorted({w for w in bare if w} | {"▁" + w for w in bare if w} | {"▁"})
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for w in words:
        vocab.setdefault(w, len(vocab))
    if whole_word_texts is None:
        backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    else:  # greedy longest known prefix, then the rest likewise; every letter is known, so no <unk>
        backend = Tokenizer(models.WordPiece(vocab=vocab, unk_token="<unk>", continuing_subword_prefix="",
                                             max_input_chars_per_word=1000))
    backend.normalizer = normalizer
    backend.pre_tokenizer = pre
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="never")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>",
        additional_special_tokens=SPECIAL_TOKENS[4:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def environment_vocabulary(env: Any) -> list[str]:
    """The env's own vocabulary (``catalog.vocabulary()``), where it has one."""
    catalog = getattr(env.unwrapped, "catalog", None)
    return list(catalog.vocabulary()) if catalog is not None and hasattr(catalog, "vocabulary") else []


# Turns an env without reference actions is played (first allowed action) to collect its action words.
_FIRST_ALLOWED_TURNS = 32


def environment_texts(env: Any, tasks: Sequence[Any], *, episodes: int = 64, vocabulary: bool = True) -> list[str]:
    """The tiny tokenizer's corpus: the env's own vocabulary (``catalog.vocabulary()`` where it has
    one, unless ``vocabulary`` is False), every task instruction, and the observations and oracle actions
    of ``episodes`` episodes; an env without reference actions (a game seat) plays its first listed
    ``info["allowed_actions"]`` instead, and every listed action joins the corpus."""
    from .envs import express_action
    from .seat_rollout import is_multi_seat

    if is_multi_seat(env):
        return _multi_seat_texts(env, tasks, episodes)
    base = env.unwrapped
    texts: list[str] = ["search[ ]", "click[ ]"]
    if vocabulary:
        texts += environment_vocabulary(env)
    texts += [str(t.instruction) for t in tasks]
    for task in list(tasks)[:episodes]:
        obs, info = env.reset(seed=int(getattr(task, "seed", 0) or 0), options={"task": task})
        texts.append(str(obs))
        reference = list(base.oracle(task)) if hasattr(base, "oracle") else []
        for turn in range(len(reference) or _FIRST_ALLOWED_TURNS):
            if reference:
                action = express_action(env, reference[turn])
            else:  # the listed actions, playing the first; free text where none is listed: an empty reply
                allowed = [str(a) for a in info.get("allowed_actions") or []]
                texts += allowed
                action = allowed[0] if allowed else ""
            texts.append(action)
            obs, _, terminated, truncated, info = env.step(action)
            texts.append(str(obs))
            if terminated or truncated:
                break
    return texts


def _multi_seat_texts(env: Any, tasks: Sequence[Any], episodes: int) -> list[str]:
    """A multi-seat env's corpus: every acting seat's observations and allowed replies over ``episodes``
    games of ``tasks``, each seat playing its first allowed reply."""
    texts = [str(t.instruction) for t in tasks]
    for task in list(tasks)[:episodes]:
        obs, infos = env.reset(seed=int(getattr(task, "seed", 0) or 0) % 2**31, options={"task": task})
        while env.agents:
            actions = {}
            for agent in env.agents:
                if infos[agent].get("acting"):
                    allowed = infos[agent].get("allowed_actions") or ["PASS"]
                    texts += [str(obs[agent]), *allowed]
                    actions[agent] = allowed[0]
            obs, _, _, _, infos = env.step(actions)
    return texts


def build_environment_tokenizer(env: Any, tasks: Sequence[Any], *, extra_texts: Iterable[str] = (),
                                episodes: int = 64, spell_ids: bool = True, whole_word_min_count: int = 0):
    """The one way the tiny policy's tokenizer is built (``evolver sft`` and ``evolver train``).

    ``whole_word_min_count``: 0 gives every word of the environment's vocabulary a whole token. N >= 1
    keeps whole tokens for the words that ``tasks`` (their instructions, and the observations and
    oracle actions of ``episodes`` of them) and ``extra_texts`` use at least N times; any other word (a
    held-out product's noun, a rare brand) is made of known pieces down to letters. A word training
    never shows then has no untrained token, and spelling the rarer train words too teaches the policy
    to copy spelled words.
    """
    if whole_word_min_count < 0:
        raise ValueError(f"whole_word_min_count must be >= 0, got {whole_word_min_count!r}")
    seen = [*environment_texts(env, tasks, episodes=episodes, vocabulary=False), *extra_texts]
    everything = [*environment_vocabulary(env), *seen]
    if whole_word_min_count == 0:
        return build_word_tokenizer(everything, spell_ids=spell_ids)
    return build_word_tokenizer(everything, spell_ids=spell_ids, whole_word_texts=seen,
                                min_frequency=whole_word_min_count)


@dataclass
class TinyPolicyConfig:
    """Size and tokenizer of the default policy (Llama-style). The defaults give about 0.5M non-embedding
    parameters; ``spell_ids`` and ``whole_word_min_count`` as in :func:`build_environment_tokenizer`."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = True
    spell_ids: bool = True
    whole_word_min_count: int = 0


def build_tiny_policy(tokenizer: Any, config: TinyPolicyConfig | None = None, *, seed: int = 0):
    """A randomly initialised Llama-style causal LM sized by ``config`` for ``tokenizer``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = config or TinyPolicyConfig()
    torch.manual_seed(seed)
    model_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=config.tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(model_config)


def load_policy(name_or_path: str | Path, *, dtype: Any = None):
    """(model, tokenizer) from a checkpoint folder written by ``evolver sft``/``train`` or a hub name.

    A hub name needs network access or a filled cache; offline runs use local folders.
    """
    import os

    from transformers import AutoModelForCausalLM, AutoTokenizer

    name_or_path = os.path.expanduser(str(name_or_path))  # recipes name fetched models as ~/.cache/...
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(name_or_path, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def build_policy(name_or_path: str | Path, *, env: Any = None, tasks: Sequence[Any] | None = None,
                 extra_texts: Iterable[str] = (), size: TinyPolicyConfig | None = None, seed: int = 0,
                 device: str | None = None):
    """``(model, tokenizer)`` ready for rollouts: left padding, EOS and pad in the generation config.

    Args:
        name_or_path: ``"tiny"`` (a small policy and a word-level tokenizer built for ``env``), a LoRA
            adapter folder (merged onto the base it names), a checkpoint folder or a hub name.
        env: The environment whose vocabulary the ``tiny`` tokenizer covers (required for ``tiny``).
        tasks: Its tasks (default: ``env.unwrapped.tasks("train")``).
        extra_texts: More texts the ``tiny`` tokenizer must know (system prompt, experience blocks).
        size: The ``tiny`` policy's size; seed: its initialisation.
        device: Move the model there.
    """
    name = str(name_or_path)
    if not name:
        raise ValueError("model_name_or_path is required (a local folder, a hub name, or 'tiny')")
    if name == "tiny":
        if env is None:
            raise ValueError("model_name_or_path 'tiny' needs the environment to build its tokenizer")
        task_list = list(tasks) if tasks is not None else list(env.unwrapped.tasks("train"))
        size = size or TinyPolicyConfig()
        tokenizer = build_environment_tokenizer(env, task_list, extra_texts=list(extra_texts),
                                                spell_ids=size.spell_ids,
                                                whole_word_min_count=size.whole_word_min_count)
        model = build_tiny_policy(tokenizer, size, seed=seed)
    elif (Path(name) / "adapter_config.json").exists():
        import json

        from peft import PeftModel

        base = json.loads((Path(name) / "adapter_config.json").read_text()).get("base_model_name_or_path")
        if not base:
            raise ValueError(f"{name}/adapter_config.json names no base_model_name_or_path")
        model, tokenizer = load_policy(base)
        model = PeftModel.from_pretrained(model, name).merge_and_unload()
        if (Path(name) / "tokenizer_config.json").exists():  # the trainer saves the tokenizer next to the adapter
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(name)
    else:
        model, tokenizer = load_policy(name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    eos = model.generation_config.eos_token_id  # keep every EOS id the model stops on (a list for chat models)
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    model.generation_config.eos_token_id = eos if tokenizer.eos_token_id in eos else [tokenizer.eos_token_id, *eos]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if device:
        model.to(device)
    return model, tokenizer

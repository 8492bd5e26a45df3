"""The real-model recipes parse into valid configs (the GPU ones on a CPU machine too)."""

from __future__ import annotations

import pytest

from evolver_train.train_cli import parse_config


@pytest.mark.parametrize("path", ["configs/smollm2_webshop.yaml", "configs/smollm2_webshop_overall.yaml",
                                  "configs/gpu/basic.yaml", "configs/gpu/overall.yaml"])
def test_recipe_parses(path, tmp_path):
    run = parse_config(["--config", path, "--output_dir", str(tmp_path / "run"), "--model_name_or_path", "tiny"])
    config = run.train
    assert run.model.use_peft and config.num_generations >= 2
    assert config.per_device_train_batch_size % config.num_generations == 0
    if path.startswith("configs/gpu/"):
        assert config.use_vllm and config.vllm_mode == "colocate"
    else:
        assert run.mechanisms if "overall" in path else not run.mechanisms
        assert config.system_prompt and "click[buy now]" in config.system_prompt

"""The loader is a walk through its rooms in order (issue 41): a model source followed from the
CLI's open_or_explain stays in each module of engine/loading once, resolve -> describe ->
check -> build -> attach, without going back and forth (tools/loading_walk.py)."""
import torch

from tests.helpers.hf_sharded import build_model, save_sharded
from tools.loading_walk import stays, summary, walk


def test_a_folder_walks_through_the_stages_in_order(tmp_path):
    model, tokenizer = build_model("llama", dtype=torch.bfloat16)
    folder = save_sharded(model, tokenizer, tmp_path / "llama")
    order = walk(str(folder), "cpu", folder)
    rooms = stays(order)
    stages = [r for r in rooms if r.split(".")[-1] in ("pipeline", "describe", "check", "build", "hf_attention")]
    stages = list(dict.fromkeys(stages))    # in the order first entered (build asks its own rule after reading)
    assert stages == ["engine.loading.pipeline", "engine.loading.describe", "engine.loading.check", "engine.loading.build",
                      "engine.seam.hf_attention"], rooms
    counts = summary(order)
    assert counts["stays"] <= 12 and counts["returns"] <= 3, rooms


def test_our_checkpoint_walks_through_the_same_stages():
    from attnscope.engine.loading.catalog import bundled_checkpoints

    order = walk(str(bundled_checkpoints()[0]), "cpu")
    rooms = stays(order)
    assert [r for r in rooms if r.split(".")[-1] in ("pipeline", "describe", "check", "build")] == [
        "engine.loading.pipeline", "engine.loading.describe", "engine.loading.check", "engine.loading.build"], rooms
    assert summary(order)["returns"] == 0, rooms


def test_a_hub_id_in_the_cache_walks_the_same_way(tmp_path, monkeypatch):
    from tests.helpers.hf_sharded import put_in_cache

    model, tokenizer = build_model("llama", dtype=torch.bfloat16)
    put_in_cache(save_sharded(model, tokenizer, tmp_path / "llama"), tmp_path / "hub", "tiny-org/llama")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    order = walk("tiny-org/llama", "cpu")
    counts = summary(order)
    assert counts["stays"] <= 12 and counts["returns"] <= 3, stays(order)


def test_the_loader_read_statically_passes_each_stage_nearly_once():
    """Issue 47: walked statically from pipeline.load (tools/static_walk.py), the loader's own
    rooms are at most 15 stays with at most 3 returns; validation.py was entered by each stage
    that asked one of its rules (29 stays and 16 returns over every engine module before)."""
    from tools import loading_walk
    from tools.static_walk import own_rooms, walk

    order = own_rooms(walk("engine.loading.pipeline", "load"), "engine.loading")
    got = loading_walk.summary(order)
    assert got["stays"] <= 15 and got["returns"] <= 3, loading_walk.stays(order)
    assert not any(step.startswith("engine.loading.validation") for step in order)

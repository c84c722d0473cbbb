"""`kge train --checkpoint_dir --checkpoint_interval --resume`: a run stopped after a checkpoint
and resumed saves the same embeddings, bit for bit, as an uninterrupted one-process run; a
checkpoint refuses other settings; with several processes a resumed run still learns."""

import io
from pathlib import Path

import numpy as np
import pytest

from distgraph.errors import InputError
from distgraph.kge import train_kge

from test_kge_train import _config


def _entities(save_dir: Path) -> np.ndarray:
    return np.load(next(save_dir.glob("*_entity.npy")))


def test_resumed_run_saves_the_same_embeddings(tmp_path):
    whole = train_kge(_config(tmp_path, max_step=60, test=False), out=io.StringIO())
    ck = str(tmp_path / "run")
    # stops at step 35: checkpoints at 10, 20 and 30, the newest two kept
    train_kge(_config(tmp_path, max_step=35, test=False, checkpoint_dir=ck, checkpoint_interval=10),
              out=io.StringIO())
    assert sorted(p.name for p in Path(ck).iterdir()) == ["step-0000000020", "step-0000000030"]
    log = io.StringIO()
    resumed = train_kge(_config(tmp_path, max_step=60, test=True, checkpoint_dir=ck, checkpoint_interval=10,
                                resume=True), out=log)
    assert f"Resume from {ck}/step-0000000030 at step 30" in log.getvalue()
    assert np.array_equal(_entities(resumed.save_dir), _entities(whole.save_dir))
    assert resumed.metrics["Test"]["MRR"] > 0.5


def test_resume_refuses_other_settings_and_needs_a_folder(tmp_path):
    ck = str(tmp_path / "run")
    train_kge(_config(tmp_path, max_step=20, test=False, checkpoint_dir=ck, checkpoint_interval=10),
              out=io.StringIO())
    with pytest.raises(InputError, match=r"other settings \(--lr 0.3 -> 0.5\)"):
        train_kge(_config(tmp_path, max_step=40, lr=0.5, checkpoint_dir=ck, resume=True), out=io.StringIO())
    with pytest.raises(InputError, match="--resume needs --checkpoint_dir"):
        train_kge(_config(tmp_path, resume=True), out=io.StringIO())


@pytest.mark.multiprocess
def test_two_processes_resume_and_learn(tmp_path):
    ck = str(tmp_path / "run")
    train_kge(_config(tmp_path, max_step=150, num_proc=2, test=False, checkpoint_dir=ck, checkpoint_interval=100),
              out=io.StringIO())
    log = io.StringIO()
    result = train_kge(_config(tmp_path, max_step=300, num_proc=2, checkpoint_dir=ck, checkpoint_interval=100,
                               resume=True), out=log)
    assert "at step 100" in log.getvalue() and result.metrics["Test"]["MRR"] > 0.5

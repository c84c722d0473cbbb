"""What `kge train` and `kge eval` check and load before torch is imported or any process
starts: the flags, the output folders, the dataset and the saved model (numpy only), and the
number of processes the work can use. Every error the command line or the input files can
show comes from here, in a fraction of a second; the warnings about the data too.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..files import write_atomically
from .config import EvalConfig, TrainConfig
from .data.formats import KGData, load_dataset
from .data.triples import row_blocks
from .saved_model import SavedModel, load_model

WARNINGS_FILE = "warnings.json"  # in the loader's cache folder


KEY_ROWS = 1 << 25  # rows whose repeats are counted at once (16 bytes each)


def say(text: str) -> None:
    """A warning or a note on standard error."""
    print(f"distgraph kge: {text}", file=sys.stderr, flush=True)


def _writable_folder(path: str | None, flag: str) -> None:
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise InputError(f"{flag} {path} is an existing file; pass a folder (it is created if missing)")


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def process_count(cfg: TrainConfig, data: KGData) -> int:
    """--num_proc capped at what the work can use: one process per training triple (per relation
    with --rel_part, where a process takes whole relations); says what it used, and warns when
    the processes outnumber the cores."""
    if cfg.rel_part:
        used = np.zeros(data.n_relations, dtype=bool)
        for block in row_blocks(data.train):
            used[block[:, 1]] = True
        work, unit = int(np.count_nonzero(used)), "relation"
    else:
        work, unit = len(data.train), "training triple"
    n = min(cfg.num_proc, work)
    if n < cfg.num_proc:
        say(f"--num_proc {cfg.num_proc}: using {n} process{'es' * (n > 1)}, as {data.name} has {work:,} {unit}"
            f"{'s' * (work > 1)} to share out")
    cores = _cores()
    if n > cores:
        say(f"warning: {n} training processes on {cores} cores: they take turns, and each step waits for them; "
            f"--num_proc {cores} is usually faster")
    return n


def data_warnings(data: KGData) -> list[str]:
    """What the data does that DGL-KE does without a word: valid/test triples naming entities or
    relations no training triple names (their rows are never trained), and repeated training
    triples (each copy is trained on). Kept in the loader's cache folder beside the triples, so a
    later run on the same files does not check them again (minutes at Freebase's size)."""
    kept = _cache_folder(data.train)
    if kept is not None:
        try:
            lines = json.loads((kept / WARNINGS_FILE).read_text())
            if isinstance(lines, list) and all(isinstance(x, str) for x in lines):
                return lines
        except (OSError, ValueError):
            pass
    out = _data_warnings(data)
    if kept is not None:
        try:
            write_atomically(kept / WARNINGS_FILE, lambda f: f.write(json.dumps(out)), mode="w")
        except OSError:  # a cache folder this user cannot write: checked again next time
            pass
    return out


def _cache_folder(rows: np.ndarray) -> Path | None:
    """The loader's cache folder `rows` are mapped from, or None (an input small enough to load)."""
    name = getattr(rows, "filename", None)
    return Path(name).parent if name else None


def _data_warnings(data: KGData) -> list[str]:
    out = []
    train = data.train
    trained_ent = np.zeros(data.n_entities, dtype=bool)
    trained_rel = np.zeros(data.n_relations, dtype=bool)
    for block in row_blocks(train):
        trained_ent[block[:, 0]] = trained_ent[block[:, 2]] = True
        trained_rel[block[:, 1]] = True
    counts, new_ent, new_rel = [], np.zeros_like(trained_ent), np.zeros_like(trained_rel)
    for name, split in (("valid", data.valid), ("test", data.test)):
        if split is None or not len(split):
            continue
        h, r, t = split[:, 0], split[:, 1], split[:, 2]
        bad = ~trained_ent[h] | ~trained_ent[t] | ~trained_rel[r]
        if bad.any():
            counts.append(f"{int(bad.sum()):,} of the {len(split):,} {name}")
            new_ent[h[~trained_ent[h]]] = new_ent[t[~trained_ent[t]]] = True
            new_rel[r[~trained_rel[r]]] = True
    if counts:
        out.append(f"warning: {' and '.join(counts)} triples name entities or relations that no training triple "
                   f"names ({int(new_ent.sum()):,} entities, {int(new_rel.sum()):,} relations): their embeddings "
                   f"stay as initialised, so those triples rank about as a random guess would")
    repeats = _repeated_rows(train, data.n_entities, data.n_relations)
    if repeats:
        out.append(f"warning: {repeats:,} of the {len(train):,} training triples repeat an earlier one: each copy "
                   f"is trained on, weighing it more; remove the repeats to weigh every triple once")
    return out


def _repeated_rows(triples: np.ndarray, n_entities: int, n_relations: int) -> int:
    """Rows of (h, r, t) equal to an earlier row, counted by sorting the rows of one share of the
    heads (h mod shares) at a time, so that a big graph's keys are never all in memory."""
    if len(triples) < 2:
        return 0
    shares = -(-len(triples) // KEY_ROWS)
    repeats = 0
    for share in range(shares):
        hr, t = [], []
        for block in row_blocks(triples):
            rows = block[block[:, 0] % shares == share] if shares > 1 else block
            hr.append(rows[:, 0] // shares * np.int64(n_relations) + rows[:, 1])
            t.append(rows[:, 2].astype(np.int64))
        repeats += _repeats(np.concatenate(hr), np.concatenate(t), n_entities)
    return repeats


def _repeats(hr: np.ndarray, t: np.ndarray, n_entities: int) -> int:
    """Pairs (hr, t) equal to an earlier pair: one sort of the int64 key hr * n_entities + t, or a
    sort by hr then t where that key would not fit in 63 bits."""
    if len(hr) < 2:
        return 0
    if (int(hr.max()) + 1) * n_entities <= 2 ** 63:
        key = hr * n_entities + t
        key.sort()
        return int(np.count_nonzero(key[1:] == key[:-1]))
    order = np.lexsort((t, hr))
    hr, t = hr[order], t[order]
    return int(np.count_nonzero((hr[1:] == hr[:-1]) & (t[1:] == t[:-1])))


def prepare_train(cfg: TrainConfig) -> tuple[TrainConfig, KGData]:
    """The checked settings (--num_proc capped) and the loaded dataset of `kge train`."""
    cfg.check()
    _writable_folder(None if cfg.no_save_emb else cfg.save_path, "--save_path")
    _writable_folder(cfg.checkpoint_dir, "--checkpoint_dir")
    data = load_dataset(cfg.data_path, cfg.dataset, cfg.format, cfg.data_files, cfg.delimiter,
                        with_importance=cfg.has_edge_importance)
    for flag, split in (("valid", data.valid), ("test", data.test)):
        if getattr(cfg, flag) and split is None:
            raise InputError(f"--{flag} needs {flag} triples: give --data_files TRAIN VALID TEST")
    for line in data_warnings(data):
        say(line)
    return replace(cfg, num_proc=process_count(cfg, data)), data


@dataclass
class EvalInputs:
    """What `kge eval` ranks with: the saved model and its dataset."""

    saved: SavedModel
    data: KGData


def prepare_eval(cfg: EvalConfig) -> EvalInputs:
    """The checked settings, saved model (finite rows) and dataset of `kge eval`."""
    cfg.check()
    saved = load_model(cfg.model_path)
    t = saved.cfg
    differ = [f"--{k} {getattr(cfg, k)!r} (saved: {getattr(t, k)!r})" for k in
              ("model_name", "hidden_dim", "gamma") if getattr(cfg, k) is not None and getattr(cfg, k) != getattr(t, k)]
    differ += [f"-{k[0:1]}{k.split('_')[1][0]} (saved without it)" for k in ("double_ent", "double_rel")
               if getattr(cfg, k) and not getattr(t, k)]
    if differ:
        raise InputError(f"{cfg.model_path} was trained with other settings than {', '.join(differ)}; drop those "
                         f"flags (kge eval reads them from the saved config.json)")
    (_, entities), (_, relations) = (saved.names(table, "--data_path (the folder holding it)", cfg.data_path,
                                                 cfg.delimiter) for table in ("entity", "relation"))
    data = load_dataset(cfg.data_path or t.data_path, cfg.dataset or t.dataset, cfg.format or t.format,
                        cfg.data_files or t.data_files, cfg.delimiter or t.delimiter,
                        entities=entities, relations=relations)
    data = replace(data, **{k: np.asarray(getattr(data, k), dtype=np.int64) for k in ("train", "valid", "test")
                            if getattr(data, k) is not None})  # ranking builds keys of int64 ids
    if data.test is None:
        raise InputError("no test triples to evaluate: give --data_files TRAIN VALID TEST")
    for line in data_warnings(data):
        say(line)
    threads = cfg.num_proc * cfg.num_thread
    if threads > _cores():
        say(f"warning: --num_proc {cfg.num_proc} x --num_thread {cfg.num_thread} = {threads} threads on {_cores()} "
            f"cores: they take turns")
    return EvalInputs(saved, data)

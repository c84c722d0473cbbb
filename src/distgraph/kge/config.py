"""Settings of `kge train` and `kge eval`, named and defaulted as `dglke_train` / `dglke_eval` flags."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields, replace

from ..errors import InputError

# DGL-KE's score functions (kge.models implements one class per name) and its alias
MODEL_NAMES = ("TransE_l1", "TransE_l2", "DistMult", "ComplEx", "RESCAL", "TransR", "RotatE", "SimplE")
MODEL_ALIASES = {"TransE": "TransE_l2"}
# entity dim = relation dim x ratio (None: any), and even dims (halves) for the models that need them
_DIM_RATIO: dict[str, int | None] = {"RotatE": 2, "TransR": None}
_EVEN_DIMS = ("ComplEx", "SimplE")
# DGL-KE's --loss_genre values; --pairwise takes the first two only
LOSS_GENRES = ("Logsigmoid", "Hinge", "Logistic", "BCE")
PAIRWISE_GENRES = ("Hinge", "Logistic")


def table_widths(model: str, hidden_dim: int, double_ent: bool, double_rel: bool) -> dict[str, int]:
    """Width of each embedding table of a (canonical) model: `entity`, then those indexed by
    relation id (RESCAL's relation is a matrix, TransR adds a projection matrix)."""
    ent, rel = hidden_dim * (1 + double_ent), hidden_dim * (1 + double_rel)
    if model == "RESCAL":
        return {"entity": ent, "relation": rel * ent}
    if model == "TransR":
        return {"entity": ent, "relation": rel, "projection": ent * rel}
    return {"entity": ent, "relation": rel}


def check_model(name: str, hidden_dim: int, double_ent: bool, double_rel: bool) -> str:
    """The canonical model name, or one clear error for a name or dimensions the score
    function cannot use (naming the flags to change); needs no torch."""
    model = MODEL_ALIASES.get(name, name)
    if model not in MODEL_NAMES:
        raise InputError(f"unknown --model_name {name!r}: choose one of {', '.join(MODEL_NAMES)}")
    if hidden_dim < 1:
        raise InputError(f"--hidden_dim must be positive, got {hidden_dim}")
    ratio = _DIM_RATIO.get(model, 1)
    entity_dim, relation_dim = hidden_dim * (1 + double_ent), hidden_dim * (1 + double_rel)
    if ratio is not None and entity_dim != relation_dim * ratio:
        want = "-de (--double_ent) without -dr" if ratio == 2 else "both -de and -dr, or neither"
        raise InputError(f"{model} needs entity dim = {ratio} x relation dim: pass {want} "
                         f"(got -de {double_ent}, -dr {double_rel})")
    if model in _EVEN_DIMS and relation_dim % 2:
        raise InputError(f"{model} splits embeddings in halves: use an even --hidden_dim (got {hidden_dim}) or "
                         f"pass -de -dr")
    return model


@dataclass
class TrainConfig:
    """One field per `dglke_train` flag (defaults are DGL-KE's, `seed` is ours)."""

    model_name: str = "TransE"
    dataset: str = "FB15k"
    data_path: str = "data"
    format: str = "built_in"
    data_files: list[str] | None = None
    delimiter: str = "\t"
    save_path: str = "ckpts"
    no_save_emb: bool = False
    max_step: int = 80000
    batch_size: int = 1024
    batch_size_eval: int = 8
    neg_sample_size: int = 256
    neg_deg_sample: bool = False
    log_interval: int = 1000
    eval_interval: int = 10000
    valid: bool = False
    test: bool = False
    num_proc: int = 1
    num_thread: int = 1
    hidden_dim: int = 400
    lr: float = 0.01
    gamma: float = 12.0
    double_ent: bool = False
    double_rel: bool = False
    neg_adversarial_sampling: bool = False
    adversarial_temperature: float = 1.0
    loss_genre: str = "Logsigmoid"
    pairwise: bool = False
    margin: float = 1.0  # of the Hinge loss
    regularization_coef: float = 2e-6
    regularization_norm: int = 3
    neg_sample_size_eval: int = -1  # candidates per ranked triple; -1: every entity
    neg_deg_sample_eval: bool = False
    eval_percent: float = 1.0
    no_eval_filter: bool = False
    force_sync_interval: int = -1  # all processes wait for each other every N steps; -1: never
    rel_part: bool = False
    async_update: bool = False
    has_edge_importance: bool = False
    global_neg_share: float = 0.5  # ours: distributed training draws this share of negatives from all entities
    gpu: list[int] | None = None
    mix_cpu_gpu: bool = False
    seed: int = 0
    checkpoint_dir: str | None = None
    checkpoint_interval: int = 1000
    resume: bool = False
    # ours: the entity table on disk in P partitions, trained bucket by bucket (PyTorch-BigGraph's scheme)
    num_entity_partitions: int = 1
    memory_budget: float | None = None  # GiB the tables may take in memory: P is chosen from it
    bucket_dir: str | None = None  # where the buckets and partitions live (default: beside the checkpoints, or a
    # temporary folder in --save_path)

    def table_widths(self) -> dict[str, int]:
        """Width of each of the model's embedding tables (`table_widths`), its name checked."""
        return table_widths(check_model(self.model_name, self.hidden_dim, self.double_ent, self.double_rel),
                            self.hidden_dim, self.double_ent, self.double_rel)

    def relation_bytes(self, n_relations: int) -> int:
        """Bytes of the tables indexed by relation id, with their row-wise Adagrad state."""
        return sum(w + 1 for name, w in self.table_widths().items() if name != "entity") * n_relations * 4

    def check(self) -> TrainConfig:
        """Reject settings that cannot run, naming the flag."""
        _positive(self, "max_step", "batch_size", "batch_size_eval", "neg_sample_size", "log_interval",
                  "eval_interval", "num_proc", "num_thread", "hidden_dim", "checkpoint_interval")
        check_eval(self)
        check_gpu(self.gpu)
        check_model(self.model_name, self.hidden_dim, self.double_ent, self.double_rel)
        if self.loss_genre not in LOSS_GENRES:
            raise InputError(f"unknown --loss_genre {self.loss_genre!r}: choose one of {', '.join(LOSS_GENRES)}")
        if self.pairwise and self.loss_genre not in PAIRWISE_GENRES:
            raise InputError(f"--pairwise compares positive and negative scores with the Hinge or Logistic loss, not "
                             f"{self.loss_genre}: add --loss_genre Hinge or --loss_genre Logistic")
        if self.pairwise and self.neg_adversarial_sampling:
            raise InputError("--pairwise and -adv (--neg_adversarial_sampling) exclude each other, as in DGL-KE: "
                             "drop one")
        if not 0 <= self.global_neg_share <= 1:
            raise InputError(f"--global_neg_share must be a fraction in [0, 1], got {self.global_neg_share}")
        if self.force_sync_interval == 0 or self.force_sync_interval < -1:
            raise InputError(f"--force_sync_interval must be a positive number of steps (or -1: never), got "
                             f"{self.force_sync_interval}")
        if self.resume and not self.checkpoint_dir:
            raise InputError("--resume needs --checkpoint_dir (the folder of the run to continue)")
        if self.lr <= 0:
            raise InputError(f"--lr must be positive, got {self.lr}")
        if self.regularization_coef < 0 or self.regularization_norm < 0:
            raise InputError("--regularization_coef and --regularization_norm must not be negative")
        _positive(self, "num_entity_partitions")
        if self.memory_budget is not None and not self.memory_budget > 0:
            raise InputError(f"--memory_budget must be a positive number of GiB, got {self.memory_budget}")
        return self

    def to_dict(self) -> dict:
        """Plain dict for config.json."""
        return asdict(self)


@dataclass
class EvalConfig:
    """`dglke_eval` flags: data settings left as None are read from the model's config.json."""

    model_path: str
    data_path: str | None = None
    dataset: str | None = None
    format: str | None = None
    data_files: list[str] | None = None
    delimiter: str | None = None
    batch_size_eval: int = 8
    num_proc: int = 1
    num_thread: int = 1
    neg_sample_size_eval: int = -1
    neg_deg_sample_eval: bool = False
    eval_percent: float = 1.0
    no_eval_filter: bool = False
    # dglke_eval also takes the model's settings; they must be those saved with it
    model_name: str | None = None
    hidden_dim: int | None = None
    gamma: float | None = None
    double_ent: bool = False
    double_rel: bool = False
    gpu: list[int] | None = None
    mix_cpu_gpu: bool = False
    seed: int = 0

    def check(self) -> EvalConfig:
        """Reject settings that cannot run, naming the flag."""
        _positive(self, "batch_size_eval", "num_proc", "num_thread")
        check_eval(self)
        check_gpu(self.gpu)
        return self


def inert_flags(cfg: TrainConfig, processes: int) -> list[str]:
    """A line for each flag given that changes nothing here (DGL-KE's flags are all accepted),
    so a user reading the log can tell: `processes` is the number of trainers that will run."""
    out = []
    gpus = gpu_ids(cfg.gpu)
    if cfg.mix_cpu_gpu and not gpus:
        out.append("--mix_cpu_gpu changes nothing without a GPU id in --gpu: the embeddings are in CPU memory and "
                   "the computing is on CPUs")
    elif cfg.mix_cpu_gpu and processes > 1:
        out.append(f"--mix_cpu_gpu changes nothing with {processes} training processes: they share the embeddings "
                   f"in CPU memory anyway, each scoring on its GPU")
    if cfg.gpu and not gpus:
        out.append("--gpu -1 changes nothing: it is DGL-KE's CPU setting, the default")
    if processes == 1 and cfg.rel_part:
        out.append("--rel_part changes nothing with one training process (it shares relations out among several)")
    if processes == 1 and cfg.force_sync_interval > 0:
        out.append("--force_sync_interval changes nothing with one training process (nothing to wait for)")
    return [f"note: {line}" for line in out]


def gpu_ids(gpu: list[int] | None) -> list[int]:
    """The GPU ids of a `--gpu` list: none for DGL-KE's `--gpu -1` (the CPU) or no flag."""
    return [g for g in gpu or () if g >= 0]


def check_gpu(gpu: list[int] | None) -> None:
    """`--gpu` is DGL-KE's `-1` (the CPU) or a list of distinct GPU ids; whether those GPUs exist
    is checked where torch runs (`kge.train.device.check_gpus`)."""
    if not gpu:
        return
    shown = " ".join(map(str, gpu))
    if any(g < -1 for g in gpu):
        raise InputError(f"--gpu {shown}: a GPU id is 0 or more (-1 means the CPU)")
    if -1 in gpu and len(gpu) > 1:
        raise InputError(f"--gpu {shown} mixes -1 (the CPU) with GPU ids: pass the GPU ids alone, or -1 alone")
    if len(set(gpu)) != len(gpu):
        raise InputError(f"--gpu {shown} names a GPU twice: list each GPU once (--num_proc puts several processes "
                         f"on each)")


def with_gpus(cfg: TrainConfig, flag: str = "--num_proc") -> TrainConfig:
    """DGL-KE's rule for `--gpu` ids: at least one training process per GPU (--num_proc, or the
    `flag` that sets it, is raised to their number), and the same number of processes on each GPU."""
    gpus = gpu_ids(cfg.gpu)
    if len(gpus) < 2:
        return cfg
    if cfg.num_proc > len(gpus) and cfg.num_proc % len(gpus):
        raise InputError(f"{flag} {cfg.num_proc} does not share out evenly over the {len(gpus)} GPUs of --gpu "
                         f"{' '.join(map(str, gpus))}: use a multiple of {len(gpus)} processes")
    return replace(cfg, num_proc=max(cfg.num_proc, len(gpus)))


def check_eval(cfg) -> None:
    """The evaluation flags shared by training and evaluation."""
    if not 0 < cfg.eval_percent <= 1:
        raise InputError(f"--eval_percent must be a fraction in (0, 1], got {cfg.eval_percent}")
    if cfg.neg_sample_size_eval == 0 or cfg.neg_sample_size_eval < -1:
        raise InputError(f"--neg_sample_size_eval must be positive (or -1: rank against every entity), got "
                         f"{cfg.neg_sample_size_eval}")
    if cfg.neg_deg_sample_eval and cfg.neg_sample_size_eval == -1:
        raise InputError("--neg_deg_sample_eval samples the candidates: give --neg_sample_size_eval too")
    if cfg.neg_deg_sample_eval and not cfg.no_eval_filter:
        raise InputError("--neg_deg_sample_eval cannot filter the known triples (as in DGL-KE): add --no_eval_filter")


def _positive(cfg: object, *names: str) -> None:
    for name in names:
        if getattr(cfg, name) < 1:
            raise InputError(f"--{name} must be a positive integer, got {getattr(cfg, name)}")


def field_defaults(cls: type) -> dict[str, object]:
    """Default of every field with one, for building the command-line parser."""
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}

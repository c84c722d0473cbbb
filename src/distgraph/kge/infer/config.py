"""Settings of `kge predict` and `kge emb-sim`, named as `dglke_predict` / `dglke_emb_sim` flags,
and their checks, made before anything is loaded (no numpy or torch here: a bad flag is refused
at once)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ...errors import InputError

PREDICT_FORMATS = ("h_r_t", "h_r_*", "h_*_t", "*_r_t", "h_*_*", "*_r_*", "*_*_t")
PREDICT_MODES = ("triplet_wise", "all", "batch_head", "batch_rel", "batch_tail")
SCORE_FUNCS = ("none", "logsigmoid")
SIM_FORMATS = ("l_r", "l_*", "*_r", "*")
SIM_MODES = ("pairwise", "all", "batch_left")
SIM_FUNCS = ("cosine", "l2", "l1", "dot", "ext_jaccard")


def check_query(fmt: str, formats: tuple, exec_mode: str, exec_modes: tuple, topk: int,
                data_files: list[str] | None, choice: tuple[str, str, tuple]) -> None:
    """The checks `kge predict` and `kge emb-sim` share: `--format`, `--exec_mode`, the scoring
    choice (flag, value, allowed values), `--topK`, and one data file per list the format reads."""
    flag, value, allowed = choice
    for name, got, ok in (("--format", fmt, formats), ("--exec_mode", exec_mode, exec_modes), (flag, value, allowed)):
        if got not in ok:
            raise InputError(f"{name} {got!r} is not one of {', '.join(ok)}")
    if topk < 1:
        raise InputError(f"--topK must be at least 1, got {topk}")
    given = [x for x in fmt.split("_") if x != "*"]
    if len(data_files or []) != len(given):
        raise InputError(f"--format {fmt} reads {len(given)} list(s) ({', '.join(given) or 'none'}) "
                         f"but --data_files names {len(data_files or [])}")


@dataclass(kw_only=True)
class QueryConfig:
    """The flags `dglke_predict` and `dglke_emb_sim` share: the query files, their format and mode."""

    format: str
    data_files: list[str]
    raw_data: bool = False
    exec_mode: str = "all"
    topk: int = 10
    output: str = "result.tsv"

    @classmethod
    def from_args(cls, args) -> QueryConfig:
        """The config of parsed command-line `args` (one attribute per field)."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


@dataclass(kw_only=True)
class PredictConfig(QueryConfig):
    """One field per `dglke_predict` flag."""

    model_path: str
    score_func: str = "none"
    entity_mfile: str | None = None
    rel_mfile: str | None = None

    def check(self) -> None:
        """Refuse settings DGL-KE's command would trip on, before anything is loaded."""
        check_query(self.format, PREDICT_FORMATS, self.exec_mode, PREDICT_MODES, self.topk, self.data_files,
                    ("--score_func", self.score_func, SCORE_FUNCS))
        if self.exec_mode == "triplet_wise" and self.format != "h_r_t":
            raise InputError("--exec_mode triplet_wise scores the i-th head, relation and tail together: "
                             "use --format h_r_t")


@dataclass(kw_only=True)
class EmbSimConfig(QueryConfig):
    """One field per `dglke_emb_sim` flag."""

    emb_file: str
    sim_func: str = "cosine"
    mfile: str | None = None

    def check(self) -> None:
        """Refuse settings DGL-KE's command would trip on, before anything is loaded."""
        check_query(self.format, SIM_FORMATS, self.exec_mode, SIM_MODES, self.topk, self.data_files,
                    ("--sim_func", self.sim_func, SIM_FUNCS))
        if self.exec_mode == "pairwise" and self.format != "l_r":
            raise InputError("--exec_mode pairwise compares the i-th left with the i-th right object: use --format l_r")

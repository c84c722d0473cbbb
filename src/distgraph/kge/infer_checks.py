"""Checks of `kge predict` and `kge emb-sim` settings, before anything is loaded (no numpy or
torch here: a bad flag is refused at once)."""

from __future__ import annotations

from ..errors import InputError


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

"""Whole-file reads and writes past the page cache (`direct_io`): the bytes round-trip exactly,
with O_DIRECT on an aligned buffer and the ordinary path on an unaligned one."""

import os

import numpy as np
import pytest

from distgraph import direct_io
from distgraph.direct_io import ALIGN, ALIGN_ROWS, aligned_empty, aligned_rows, read_into, write_atomically_from


def _opened_flags(monkeypatch) -> list[int]:
    flags, real = [], os.open

    def spy(path, f, *a):
        flags.append(f)
        return real(path, f, *a)

    monkeypatch.setattr(direct_io.os, "open", spy)
    return flags


def test_aligned_rows_are_whole_pages_of_any_width():
    assert (aligned_rows(1), aligned_rows(ALIGN_ROWS), aligned_rows(ALIGN_ROWS + 1)) == (1024, 1024, 2048)
    for width in (1, 3, 100, 401):
        assert aligned_rows(5) * width * 4 % ALIGN == 0
    t = aligned_empty(3, 7, 5)
    assert t.shape == (3, 7, 5) and t.is_contiguous() and t.data_ptr() % ALIGN == 0


@pytest.mark.parametrize("size", [ALIGN * 3, ALIGN * 3 - 52, 4])
def test_an_aligned_buffer_round_trips_directly_and_the_file_has_its_exact_size(tmp_path, monkeypatch, size):
    src = aligned_empty(ALIGN * 4 // 4).numpy().view(np.uint8)
    src[:] = np.random.default_rng(size).integers(0, 256, len(src), dtype=np.uint8)
    flags = _opened_flags(monkeypatch)
    write_atomically_from(tmp_path / "f", src, size)
    assert os.path.getsize(tmp_path / "f") == size and os.listdir(tmp_path) == ["f"]
    dst = aligned_empty(ALIGN * 4 // 4).numpy().view(np.uint8)
    dst[:] = 7
    assert read_into(tmp_path / "f", dst, size) == size
    assert np.array_equal(dst[:size], src[:size])
    assert (dst[-(-size // ALIGN) * ALIGN:] == 7).all()  # nothing past the last page of the file is touched
    if direct_io._DIRECT:
        assert all(f & direct_io._DIRECT for f in flags)  # (the test folder's file system takes O_DIRECT)


def test_an_unaligned_buffer_takes_the_ordinary_path(tmp_path, monkeypatch):
    room = aligned_empty(ALIGN // 2).numpy().view(np.uint8)[1:1001]  # starts one byte past a page
    room[:] = np.arange(1000) % 251
    flags = _opened_flags(monkeypatch)
    write_atomically_from(tmp_path / "f", room, 1000)
    back = np.zeros(1000, dtype=np.uint8)
    assert read_into(tmp_path / "f", back, 1000) == 1000 and np.array_equal(back, room)
    assert not any(f & direct_io._DIRECT for f in flags) if direct_io._DIRECT else flags


def test_a_file_of_another_size_is_not_read(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    room = aligned_empty(ALIGN // 4).numpy().view(np.uint8)
    room[:] = 0
    assert read_into(tmp_path / "f", room, 400) == 100 and not room.any()

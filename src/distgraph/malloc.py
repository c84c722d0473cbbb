"""How the process holds memory: freed heap memory kept instead of handed back to the kernel,
and 2 MB pages asked for where gigabytes are read at random."""

from __future__ import annotations

import ctypes
import mmap


def keep_freed_memory() -> None:
    """Ask glibc to keep freed blocks instead of returning them to the kernel.

    Training steps and request handling allocate many 0.2-5 MB temporaries (gathered rows,
    received messages); by default glibc serves each from a fresh mmap and unmaps it on
    free, so every use page-faults and the kernel zeroes the pages again. Measured: a KGE
    step 25 -> 13.5 ms; a remote pull of 10k 512-byte rows 1.32 -> 1.53 M rows/s. No-op off glibc.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]  # mallopt(int, int): values must fit an int
        libc.mallopt(-3, 1 << 25)  # M_MMAP_THRESHOLD: serve blocks below 32 MB (its maximum) from the heap
        libc.mallopt(-1, (1 << 31) - 1)  # M_TRIM_THRESHOLD: keep up to 2 GB of free heap
    except (OSError, AttributeError):
        pass


def release_freed_memory() -> None:
    """Hand the heap's free blocks back to the kernel (glibc's malloc_trim) before a phase that
    needs the memory elsewhere (the partitioner's KaMinPar call). No-op off glibc."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def huge_pages(a) -> bool:
    """Ask for 2 MB pages for the pages of array `a` (numpy) not yet touched (madvise
    MADV_HUGEPAGE; the machine's transparent huge pages set to `madvise`, as on this project's
    machines, give them only where asked). Random reads into gigabytes otherwise take a TLB miss
    and a page walk apiece:
    - a memory-mapped file's pages read from disk enter the page cache as 2 MB folios (on the
      1B-edge tier, warm sampling 273,000 seeds/s read cold without it, 358,000-380,000 with it);
    - private memory (the bucket trainer's entity slots) faults in as 2 MB pages: a gather and an
      update of 3,000 random rows of a 3 GB table took 6.4 ms in 4 kB pages, 2.4 ms in 2 MB ones.
    Shared memory follows the machine's `shmem_enabled` instead. Whether the kernel took the advice."""
    if a.nbytes < 1 << 21 or not hasattr(mmap, "MADV_HUGEPAGE"):
        return False
    start = a.ctypes.data & ~(mmap.PAGESIZE - 1)  # madvise takes a page-aligned range
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return False
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return madvise(start, a.ctypes.data + a.nbytes - start, mmap.MADV_HUGEPAGE) == 0

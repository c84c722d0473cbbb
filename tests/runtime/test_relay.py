"""The launcher relays output line by line, progress-bar redraws included (at most one per
PROGRESS_SECONDS per stream, and the last one before the bar finishes or is cleared)."""

import io

from distgraph.launch.relay import PROGRESS_SECONDS, LineRelay


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def relay():
    out, clock = io.StringIO(), Clock()
    return LineRelay(lambda text: out.write(f"[0/trainer/0] {text}\n"), clock), out, clock


def test_lines_are_prefixed_and_split_across_reads():
    r, out, _ = relay()
    r.feed(b"epoch 0: loss 1.5\nepo")
    r.feed(b"ch 1\r\n\n")  # CRLF ends a line; an empty line stays a line
    r.feed("caf\u00e9".encode()[:4])  # a character split between two reads
    r.feed("caf\u00e9".encode()[4:] + b" without newline")
    r.close()
    assert out.getvalue() == ("[0/trainer/0] epoch 0: loss 1.5\n[0/trainer/0] epoch 1\n[0/trainer/0] \n"
                              "[0/trainer/0] caf\u00e9 without newline\n")


def test_progress_redraws_are_throttled_and_the_last_one_is_kept():
    r, out, clock = relay()
    for step in range(10):  # ten redraws within one PROGRESS_SECONDS
        r.feed(f"\repoch 0: {step}/10".encode())
        clock.now += PROGRESS_SECONDS / 20
    r.feed(b"\r" + b" " * 20 + b"\r")  # tqdm(leave=False) clears its line when done
    r.feed(b"epoch 0: val acc 0.9\n")
    clock.now += PROGRESS_SECONDS
    r.feed(b"\repoch 1: 1/10")
    r.feed(b"\repoch 1: 10/10\n")  # a bar that stays: its last redraw ends with a newline
    r.close()
    assert out.getvalue().splitlines() == [
        "[0/trainer/0] epoch 0: 0/10", "[0/trainer/0] epoch 0: 9/10", "[0/trainer/0] epoch 0: val acc 0.9",
        "[0/trainer/0] epoch 1: 1/10", "[0/trainer/0] epoch 1: 10/10"]


def test_a_redraw_left_at_the_end_of_the_stream_is_relayed():
    r, out, clock = relay()
    r.feed(b"\rstep 1")
    r.feed(b"\rstep 2\r")
    r.close()
    assert out.getvalue().splitlines() == ["[0/trainer/0] step 1", "[0/trainer/0] step 2"]

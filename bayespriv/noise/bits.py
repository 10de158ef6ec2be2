"""Uniform random bits for the exact samplers: :class:`BitSource`.

Bits come from the OS CSPRNG (:meth:`BitSource.system`, read in blocks of :data:`BLOCK_BYTES`)
unless a seed is given for testing (:meth:`BitSource.from_rng`); :meth:`BitSource.randbelow` and
:meth:`BitSource.bernoulli` are exact.
"""

from __future__ import annotations

import itertools
import numbers
import os
import sys
import threading
from typing import Any, Callable, Iterator

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.random import RNGLike, as_generator

#: Bytes fetched from the bit source's backend at a time (one ``os.urandom`` call per block).
BLOCK_BYTES = 4096
#: Whether native 64-bit words are little-endian (then a block is read through a memoryview).
_LITTLE_ENDIAN = sys.byteorder == "little"
#: Bits compared at a time by :meth:`BitSource.bernoulli`.
CHUNK_BITS = 64
#: Each thread's release source (:meth:`BitSource.for_release`) and the process that made it.
_RELEASE_SOURCES = threading.local()


def _forget_release_sources() -> None:
    """In a forked child: forget the forking thread's source (the other threads do not exist there)."""
    _RELEASE_SOURCES.__dict__.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _forget_release_sources())  # looked up at fork time


class BitSource:
    """Uniform random bits, from the OS CSPRNG or (for tests) from a seeded NumPy generator.

    Bytes are fetched in blocks of :data:`BLOCK_BYTES` (``os.urandom`` for :meth:`system`:
    still OS CSPRNG output, but one system call per block of 512 words rather than one per
    draw) and handed out as 64-bit words: a request for k ≤ 64 bits takes the low k bits of
    the next unused word (the rest of that word is discarded, never reused); k > 64 bits
    concatenate ⌈k/64⌉ words.

    Parameters
    ----------
    fill : callable int -> bytes
        Returns that many fresh uniform random bytes.
    seeded : bool
        Whether the bits are replayable (a seed was given). Seeded sources are for tests only.

    Attributes
    ----------
    seeded : bool
    """

    __slots__ = ("_fill", "_word", "seeded")

    def __init__(self, fill: Callable[[int], bytes], *, seeded: bool) -> None:
        if not callable(fill):
            raise ParameterTypeError(f"fill must be a callable returning bytes; got {type(fill).__name__}")
        self._fill = fill
        # _word() returns the next unused uniform 64-bit word; blocks are fetched lazily, one
        # ``fill(BLOCK_BYTES)`` call per 512 words (a C-level iterator: no Python frame per word).
        self._word = itertools.chain.from_iterable(map(self._block_words, itertools.repeat(None))).__next__
        self.seeded = bool(seeded)

    def _block_words(self, _: Any) -> Iterator[int]:
        """The block's 512 little-endian 64-bit words, converted lazily (a source used for one
        release reads ~100 of them; converting all 512 up front cost ~8 µs of an ~85 µs release)."""
        block = bytes(self._fill(BLOCK_BYTES))
        if len(block) != BLOCK_BYTES:
            raise ValidationError(f"fill must return {BLOCK_BYTES} bytes; got {len(block)}")
        if _LITTLE_ENDIAN:  # native "Q" is "<u8": the same words, in the same order
            return iter(memoryview(block).cast("Q"))
        return iter(np.frombuffer(block, dtype="<u8").tolist())  # pragma: no cover - big-endian hosts

    @classmethod
    def system(cls) -> "BitSource":
        """Bits from the OS CSPRNG (``os.urandom``), buffered in blocks."""
        return cls(os.urandom, seeded=False)

    @classmethod
    def for_release(cls) -> "BitSource":
        """The calling thread's :meth:`system` source, kept between releases (one ``os.urandom`` call per
        :data:`BLOCK_BYTES` instead of one per release).

        Safe to keep because a word is never handed out twice: each thread has its own source (a
        ``threading.local``), and a source made in another process is never used: the process id is
        compared on every call (a forked child inherits its parent's unread buffer, which would repeat the
        parent's noise), and ``os.register_at_fork`` drops the sources in a child as well.
        """
        pid = os.getpid()
        src = getattr(_RELEASE_SOURCES, "source", None)
        if src is None or _RELEASE_SOURCES.pid != pid:
            src = cls.system()
            _RELEASE_SOURCES.source, _RELEASE_SOURCES.pid = src, pid
        return src

    @classmethod
    def from_rng(cls, rng: RNGLike) -> "BitSource":
        """``None``: :meth:`system`; an int, ``SeedSequence`` or ``Generator``: seeded bits
        from ``Generator.bytes`` (a Generator passed in is advanced). For tests only."""
        if rng is None:
            return cls.system()
        gen = as_generator(rng)
        return cls(gen.bytes, seeded=True)

    def __repr__(self) -> str:
        return f"BitSource(seeded={self.seeded})"

    def getrandbits(self, k: int) -> int:
        """An integer uniform on {0, …, 2^k − 1} (k ≥ 0)."""
        if k <= 64:
            return self._word() & ((1 << k) - 1)
        out, have = 0, 0
        while have < k:
            out |= self._word() << have
            have += 64
        return out & ((1 << k) - 1)

    def randbelow(self, n: int) -> int:
        """An integer exactly uniform on {0, …, n − 1}, for a Python int n ≥ 1 of any size.

        Rejection on ``(n − 1).bit_length()`` random bits: each try is accepted with
        probability n / 2^⌈log2 n⌉ > 1/2.
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise ParameterTypeError(f"n must be an integer >= 1; got {n!r} of type {type(n).__name__}")
        n = int(n)
        if n < 1:
            raise fail("n", "an integer >= 1", n)
        return self._below(n)

    def _below(self, n: int) -> int:
        """:meth:`randbelow` without argument checks (n a Python int ≥ 1)."""
        k = (n - 1).bit_length()
        if k <= 64:
            mask = (1 << k) - 1
            word = self._word
            r = word() & mask
            while r >= n:
                r = word() & mask
            return r
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return r

    def bernoulli(self, num: int, den: int) -> bool:
        """True with probability exactly num/den (0 ≤ num ≤ den, den ≥ 1, Python ints).

        Compares a uniform U ∈ [0, 1), drawn 64 bits at a time, with the binary expansion of
        num/den: at the first 64-bit chunk where they differ, U < num/den iff U's chunk is the
        smaller. Uses 64 bits with probability 1 − 2^-64, never rejects.
        """
        word = self._word
        while True:
            q, num = divmod(num << CHUNK_BITS, den)
            r = word()
            if r != q:
                return r < q

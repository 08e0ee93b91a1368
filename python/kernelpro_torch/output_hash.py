"""A keyed multilinear hash of a tensor's bits, computed on the tensor's device: how the
KernelBench worker knows that a timed output equals one it has already verified, without
keeping a copy of a multi-gigabyte output or comparing it in full again.

The tensor's bytes, in logical (row-major) order whatever its strides, are read as words (int32
for elements of 4, 8 or 16 bytes, int16 for 2, uint8 for 1) and cut into pieces of
`piece_words` words. The fingerprint is the vector of one 64-bit sum per piece:

    F[c] = sum_i r[i] * w[c * piece_words + i]   (mod 2^64)

with w sign-extended (uint8: zero-extended) to int64 and r[i] drawn uniformly from [0, 2^63)
by a generator seeded from the OS when the hash is made: nothing a candidate could know in
advance, and a new key for every evaluation.

Worked bound. F is linear, so F(x) == F(y) exactly when F(d) == 0 for the word-wise difference
d = x - y, taken as integers. Two different tensors differ in some word i of some piece c, by
0 < |d_i| < 2^32, so d_i has at most 31 factors of 2. For any values of the other keys,
r[i] * d_i == t (mod 2^64) holds for at most 2^30 of the 2^63 values of r[i]: two different
tensors of the same shape and dtype get the same fingerprint with probability at most 2^-33,
whatever the difference (one flipped bit, a permutation, every element). Even a collision found
on purpose buys nothing: returning a kept copy of the right output, which passes this check by
design, is easier, and the cache checks after timing are what catch both.

Cost: per piece one multiply into a reused int64 buffer and one sum, so a piece's working set
(its words, r and the products, 4 + 8 + 8 bytes a word: 80 MiB at the default 2^22 words) is
the largest temporary; the tensor itself is read once. A non-contiguous tensor's piece is
gathered first (torch.take, one more piece-sized copy). The 6.4 GB output of KernelBench
level1/19_ReLU is about 400 pieces, two kernels each.
"""

import random

import torch

PIECE_WORDS = 1 << 22


def _word_dtype(element_size):
    """(the word dtype an element is read as, words per element), or None for odd sizes."""
    if element_size % 4 == 0:
        return torch.int32, element_size // 4
    if element_size == 2:
        return torch.int16, 1
    if element_size == 1:
        return torch.uint8, 1
    return None


class MultilinearHash:
    """Fingerprints of tensors on one device under one random key (see the module's comment).

    fingerprint(t) -> a 1-D int64 tensor on t's device (one entry per piece), or None when t
    cannot be read as words (sparse, quantized, or an element size of 3, 5, 6 or 7 bytes); the
    caller then compares in full. Two fingerprints of the same MultilinearHash are equal when
    the tensors' bits are (torch.equal on them is the test); they mean nothing across instances.
    Not thread-safe: the product buffer is shared between calls."""

    def __init__(self, device, piece_words=PIECE_WORDS, seed=None):
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.piece_words = int(piece_words)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed if seed is not None else random.SystemRandom().getrandbits(63))
        self.key = torch.empty(self.piece_words, dtype=torch.int64, device=self.device).random_(generator=gen)
        self.products = torch.empty(self.piece_words, dtype=torch.int64, device=self.device)

    def _pieces(self, t, words_per_element, word_dtype):
        """The tensor's words in logical order, piece_words at a time (the last piece shorter)."""
        n = t.numel()
        if n == 0:
            return
        if t.is_contiguous():
            words = t.reshape(-1).view(word_dtype)
            yield from words.split(self.piece_words)
            return
        per_piece = self.piece_words // words_per_element
        for s in range(0, n, per_piece):
            index = torch.arange(s, min(s + per_piece, n), dtype=torch.int64, device=t.device)
            yield torch.take(t, index).view(word_dtype)

    def fingerprint(self, t):
        if t.layout != torch.strided or t.is_quantized or t.device != self.device:
            return None
        wd = _word_dtype(t.element_size())
        if wd is None:
            return None
        word_dtype, per_element = wd
        if self.piece_words % per_element:
            return None
        if t.dtype == torch.bool:
            t = t.view(torch.uint8)
        sums = []
        try:
            for piece in self._pieces(t, per_element, word_dtype):
                m = piece.numel()
                products = self.products[:m]
                torch.mul(piece, self.key[:m], out=products)
                sums.append(products.sum())
        except RuntimeError:  # a dtype whose view as words PyTorch refuses (complex, say)
            return None
        if not sums:
            return torch.zeros(0, dtype=torch.int64, device=self.device)
        return torch.stack(sums)

    def same(self, a, b):
        """True when two fingerprints of this hash are equal (one device sync, 8 bytes a piece)."""
        return a is not None and b is not None and a.shape == b.shape and bool(torch.equal(a, b))

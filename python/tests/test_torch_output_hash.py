"""The fingerprint that recognizes an already verified timed output, on CPU tensors: equal bits
give equal fingerprints whatever the layout, and any changed bit or moved element changes it."""

import unittest

import torch

from kernelpro_torch import output_hash

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.uint8, torch.int8, torch.bool)


def sample(dtype, shape=(7, 45)):
    g = torch.Generator().manual_seed(3)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


class MultilinearHashTest(unittest.TestCase):
    def setUp(self):
        # 16 words a piece: a 7 x 45 tensor spans many pieces, so moves across pieces are tested.
        self.h = output_hash.MultilinearHash("cpu", piece_words=16, seed=11)

    def test_equal_bits_give_equal_fingerprints_in_any_layout(self):
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                x = sample(dtype)
                f = self.h.fingerprint(x)
                self.assertIsNotNone(f)
                self.assertTrue(self.h.same(f, self.h.fingerprint(x.clone())))
                strided = x.t().contiguous().t()  # same values, column-major storage
                self.assertFalse(strided.is_contiguous())
                self.assertTrue(self.h.same(f, self.h.fingerprint(strided)))
                # the same storage read in another logical order is another tensor
                self.assertFalse(self.h.same(f, self.h.fingerprint(x.t().contiguous())))

    def test_every_single_bit_flip_changes_the_fingerprint(self):
        for dtype in (torch.float32, torch.float64, torch.float16, torch.int64, torch.uint8):
            with self.subTest(dtype=dtype):
                x = sample(dtype, (3, 5))
                f = self.h.fingerprint(x)
                raw = x.reshape(-1).view(torch.uint8)
                for byte in range(raw.numel()):
                    for bit in range(8):
                        y = x.clone()
                        y.reshape(-1).view(torch.uint8)[byte] ^= 1 << bit
                        self.assertFalse(self.h.same(f, self.h.fingerprint(y)), f"byte {byte} bit {bit}")

    def test_moved_elements_change_the_fingerprint(self):
        x = torch.randn(7, 45)
        f = self.h.fingerprint(x)
        flat = x.reshape(-1)
        for i, j in ((0, 1), (0, 16), (3, 3 + 16 * 5), (100, 314)):  # same piece, same offset in other pieces
            y = flat.clone()
            y[i], y[j] = flat[j], flat[i]
            self.assertFalse(self.h.same(f, self.h.fingerprint(y.view(7, 45))), (i, j))
        for seed in range(20):
            perm = torch.randperm(flat.numel(), generator=torch.Generator().manual_seed(seed))
            self.assertFalse(self.h.same(f, self.h.fingerprint(flat[perm].view(7, 45))))
        # Sign flips only (a difference of 2^31 in a word) and a value swapped with its negation.
        y = flat.clone()
        y[5], y[40] = -flat[5], -flat[40]
        self.assertFalse(self.h.same(f, self.h.fingerprint(y.view(7, 45))))

    def test_negative_zero_is_other_bits(self):
        # Equal values, other bits: no match, so the caller compares in full (and passes).
        z = torch.zeros(4)
        self.assertFalse(self.h.same(self.h.fingerprint(z), self.h.fingerprint(-z)))

    def test_one_sum_a_piece_and_a_key_per_instance(self):
        x = torch.randn(100)  # 100 words: 7 pieces of 16
        self.assertEqual(tuple(self.h.fingerprint(x).shape), (7,))
        self.assertEqual(tuple(self.h.fingerprint(x.double()).shape), (13,))  # 200 words
        other = output_hash.MultilinearHash("cpu", piece_words=16, seed=12)
        self.assertFalse(torch.equal(self.h.fingerprint(x), other.fingerprint(x)))
        drawn = output_hash.MultilinearHash("cpu", piece_words=16)  # a key from the OS
        self.assertTrue(drawn.same(drawn.fingerprint(x), drawn.fingerprint(x.clone())))

    def test_empty_scalar_and_shape_mismatch(self):
        self.assertTrue(self.h.same(self.h.fingerprint(torch.empty(0)), self.h.fingerprint(torch.empty(0, 3).t())))
        a, b = torch.tensor(2.5), torch.tensor(-2.5)
        self.assertTrue(self.h.same(self.h.fingerprint(a), self.h.fingerprint(a.clone())))
        self.assertFalse(self.h.same(self.h.fingerprint(a), self.h.fingerprint(b)))
        self.assertFalse(self.h.same(None, self.h.fingerprint(a)))

    def test_unreadable_tensors_have_none(self):
        self.assertIsNone(self.h.fingerprint(torch.randn(4, 4).to_sparse()))
        odd = output_hash.MultilinearHash("cpu", piece_words=15, seed=1)  # 15 words cannot hold 8-byte elements
        self.assertIsNone(odd.fingerprint(torch.randn(4, dtype=torch.float64)))


if __name__ == "__main__":
    unittest.main()

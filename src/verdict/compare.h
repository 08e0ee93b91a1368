// Output checking: the pure half of correctness. The rules (what passes, and the reason given)
// live here; the worker tallies an output against the reference's on the GPU and judges the
// tallies with conclude_check, and check_output does both on the host (tests, small outputs).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "task/dtype.h"
#include "task/task.h"

namespace kp::eval {

// The bit pattern the worker writes into every output element before each candidate call, so
// an element the candidate never writes is caught. Floating types get a quiet NaN with a
// recognizable payload (fp32 0x7FC0DEAD, fp16 0x7E5B, bf16 0x7FDB, fp64 0x7FF8DEADBEEFDEAD);
// integers a large odd value (int32 0x7EADBEEF, int64 0x7EADBEEFDEADBEEF); bool 0xA5, which is
// neither 0 nor 1. The low dtype_size(dtype) bytes are the pattern.
uint64_t poison_bits(task::DType dtype);

// Host conversions (round-to-nearest-even is not needed: these only read).
float half_to_float(uint16_t bits);
float bf16_to_float(uint16_t bits);
// Element i of a buffer of `dtype`, as double (bool: 0 or 1, any other byte as its value).
double element_as_double(const void* data, task::DType dtype, int64_t i);

struct OutputCheck {
  bool passed = false;
  std::string reason;            // empty when passed; else the failure and the first bad element
  int64_t elements = 0;
  int64_t mismatches = 0;        // elements with |out - ref| > atol + rtol * |ref|
  int64_t unwritten = 0;         // elements that still hold the poison pattern
  int64_t nonfinite = 0;         // NaN or Inf in out where the reference is finite
  int64_t reference_nonfinite = 0;
  int64_t first_bad_index = -1;  // flat index of the first failing element
  double max_abs_error = 0;
  double max_rel_error = 0;      // |out - ref| / |ref| over elements with ref != 0
  double rel_norm_error = 0;     // ||out - ref||_2 / ||ref||_2 (absolute norm when ||ref|| = 0)
  bool constant_output = false;  // every element equal while the reference varies
};

// The per-element tallies of one output check before it is judged: what check_output gathers on
// the host, and what the worker's comparison kernel (judge/device_compare.h) gathers on the GPU
// without copying the tensors out. conclude_check turns either into the same OutputCheck.
struct OutputTally {
  int64_t elements = 0;
  int64_t mismatches = 0, unwritten = 0, nonfinite = 0, reference_nonfinite = 0;
  int64_t first_bad_index = -1;
  double max_abs_error = 0, max_rel_error = 0;
  double err_sq = 0, ref_sq = 0;               // over elements compared (both finite)
  double ref_min = INFINITY, ref_max = -INFINITY;  // over finite reference elements
  bool out_constant = true;                    // every element has the bits of element 0
  double first_out = 0;                        // element 0 of out, for the constant-output message
  std::string first_detail;                    // what is wrong with element first_bad_index
};

// The tallies of n elements on the host (check_output is conclude_check of this).
OutputTally tally_output(const void* out, const void* ref, task::DType dtype, int64_t n, const task::Tolerance& tol);

// The verdict on an output from its tallies, with the reason check_output gives.
OutputCheck conclude_check(const OutputTally& t, task::DType dtype, const task::Tolerance& tol,
                           const std::vector<int64_t>& shape);

// Checks n elements of `out` against `ref` (both of `dtype`, row-major `shape` used only to
// print indices). Floating outputs pass when: no element is unwritten; no element is NaN or Inf
// where the reference is finite (NaN never passes); every element is within atol + rtol * |ref|;
// the relative norm is within tol.rel_norm; and the output is not constant while the reference
// varies. Integer and bool outputs must match exactly. A reference with NaN or Inf fails with a
// reason that blames the task, since no candidate can be judged against it.
OutputCheck check_output(const void* out, const void* ref, task::DType dtype, int64_t n,
                         const task::Tolerance& tol, const std::vector<int64_t>& shape);

// What a failed check looks like from the check alone (a correctness trial's failure, in either
// worker): the cheat it is named, "constant_output", "precision_downgrade" or "" for a plain wrong
// answer, and a sentence for the reason (empty when there is none). precision_downgrade is a
// heuristic: every element written and finite, off by an error of the size fp16, bf16 or TF32
// arithmetic gives, in an fp32 or fp64 output; a wrong formula with an error of that size gets the
// same name. A reference with NaN or Inf is the task's fault: no name.
struct FailureKind {
  std::string cheat;
  std::string hint;
};
FailureKind failure_kind(const OutputCheck& c, task::DType dtype);

// "[3, 17]" for flat index 3*N+17 of shape [M, N].
std::string format_index(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace kp::eval

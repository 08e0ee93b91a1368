// The kind of work a task does (a GEMM, a reduction, an elementwise map...), the key by which
// what one run learned reaches another (lessons in the memory, the planner's playbook): what
// worked for a row sum's block size says nothing about a GEMM with a fused epilogue.
#pragma once

#include <string>
#include <vector>

#include "task/task.h"

namespace kp::task {

// One of "gemm", "conv", "attention", "scan", "loss", "softmax", "normalization", "reduction",
// "pooling", "elementwise", "data-movement", "network", or "" when unknown.
//  - a native task: its category when it is one of these;
//  - a KernelBench problem: level 3 is "network"; else read from the problem's name, the op that
//    dominates first (a level-2 "Gemm_Divide_Sum_Scaling" is a GEMM with an epilogue: "gemm"),
//    and "elementwise" for the activations and the like.
std::string work_kind(const Task& task);

// Every kind work_kind can give.
const std::vector<std::string>& work_kinds();

}  // namespace kp::task

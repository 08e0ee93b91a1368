// The GPU census of a campaign's host: which GPUs its lanes take (`bench run --gpus all`) and the
// name of the card its PyTorch baselines are filed under. Read from CUDA_VISIBLE_DEVICES and
// nvidia-smi, not from a CUDA context: the campaign's own process never holds a GPU.
#pragma once

#include <string>
#include <vector>

namespace kp::campaign {

// The host's GPUs as CUDA_VISIBLE_DEVICES values: CUDA_VISIBLE_DEVICES's own entries when set,
// else nvidia-smi's indices; empty without a GPU (or without nvidia-smi).
std::vector<std::string> host_gpus();

// The name of GPU `index` ("NVIDIA H100 80GB HBM3"; "" for the first one visible), or "" when
// nvidia-smi cannot say.
std::string gpu_name(const std::string& index);

}  // namespace kp::campaign

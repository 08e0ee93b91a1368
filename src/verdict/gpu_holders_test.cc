#include "verdict/gpu_holders.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

TEST(GpuHolders, AnotherProcessHoldingTheGpuMakesAnOutOfMemoryTheMachines) {
  // The case of issue 28: a KernelBench worker left behind held 68 GiB.
  const GpuHolders h = parse_gpu_holders("4242, /usr/bin/python3, 69632\n777, /work/build/kp-worker, 1024\n", 777);
  EXPECT_EQ(h.others_bytes, uint64_t{69632} << 20);
  EXPECT_TRUE(h.self_listed);
  EXPECT_TRUE(held_elsewhere(bytes_held_elsewhere(h, uint64_t{80} << 30, 0, uint64_t{1} << 30)));
  EXPECT_EQ(h.description, "4242 /usr/bin/python3 69632 MiB; 777 /work/build/kp-worker 1024 MiB (this worker)");
}

TEST(GpuHolders, TheWorkersOwnMemoryAndSmallNeighboursAreNot) {
  const uint64_t total = uint64_t{80} << 30, own = uint64_t{70} << 30, free = uint64_t{9} << 30;
  EXPECT_FALSE(held_elsewhere(bytes_held_elsewhere(parse_gpu_holders("777, kp-worker, 71680\n", 777), total, free, own)));
  EXPECT_FALSE(held_elsewhere(
      bytes_held_elsewhere(parse_gpu_holders("12, Xorg, 512\n777, kp-worker, 71680\n", 777), total, free, own)));
}

TEST(GpuHolders, WhereThePidsAreTheHostsTheMemoryIsReckoned) {
  // In a container nvidia-smi names host pids: this worker (host pid 90001) is not found in the
  // list, so its own 70 GiB must not count as another's; what is neither free nor its own is.
  const uint64_t total = uint64_t{80} << 30, own = uint64_t{70} << 30;
  const GpuHolders alone = parse_gpu_holders("90001, python3, 71680\n", 777);
  EXPECT_FALSE(alone.self_listed);
  EXPECT_FALSE(held_elsewhere(bytes_held_elsewhere(alone, total, uint64_t{9} << 30, own)));
  const GpuHolders shared = parse_gpu_holders("90001, python3, 71680\n90002, python3, 8192\n", 777);
  EXPECT_TRUE(held_elsewhere(bytes_held_elsewhere(shared, total, uint64_t{1} << 30, own)));  // 8 GiB is another's
  EXPECT_FALSE(held_elsewhere(bytes_held_elsewhere(parse_gpu_holders("", 777), total, total, 0)));  // an idle GPU
}

TEST(GpuHolders, UnreadableLinesAreSkippedAndNamesMayHoldCommas) {
  const GpuHolders h =
      parse_gpu_holders("pid, process_name, used_gpu_memory [MiB]\n55, [Not Found], [N/A]\n56, a,b, 3000\n", 1);
  EXPECT_EQ(h.others_bytes, uint64_t{3000} << 20);
  EXPECT_EQ(h.description, "56 a,b 3000 MiB");
}

}  // namespace
}  // namespace kp::eval

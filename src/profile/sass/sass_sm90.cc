// Hopper (sm_90, sm_90a): the generic table plus the opcodes Hopper added (profiling.md
// section 3.4): warpgroup MMA (wgmma, sm_90a only), the Tensor Memory Accelerator and bulk
// copies, transaction-counting mbarriers, stmatrix, thread-block-cluster fences.
#include <vector>

#include "profile/sass/sass_arch.h"

namespace kp::profile {

namespace {

struct ClassOpcodes {
  SassClass cls;
  std::vector<const char*> opcodes;
};

const std::vector<ClassOpcodes>& hopper_opcodes() {
  static const std::vector<ClassOpcodes> table = {
      // wgmma.mma_async: HGMMA.64x128x16.F32.BF16 (fp16/bf16/tf32), IGMMA (int8), QGMMA (fp8),
      // BGMMA (binary); WARPGROUP.ARRIVE (wgmma.fence), WARPGROUP.DEPBAR.LE gsb0 (wait_group).
      {SassClass::kTensorWarpgroup, {"HGMMA", "IGMMA", "QGMMA", "BGMMA", "WARPGROUP"}},
      // cp.async.bulk.tensor (UTMALDG.2D, UTMASTG, UTMAREDG), prefetch.tensor (UTMAPF),
      // descriptor cache control (UTMACCTL), cp.async.bulk without a tensor map (UBLKCP.S.G,
      // UBLKRED, UBLKPF). They issue from the uniform datapath but move data: not kUniform.
      {SassClass::kTma,
       {"UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL", "UTMACMDFLUSH", "UBLKCP", "UBLKRED", "UBLKPF"}},
      // mbarrier.init (SYNCS.EXCH.64), arrive.expect_tx (SYNCS.ARRIVE.TRANS64),
      // try_wait.parity (SYNCS.PHASECHK.TRANS64.TRYWAIT).
      {SassClass::kMbarrier, {"SYNCS"}},
      {SassClass::kShared, {"STSM"}},           // stmatrix
      {SassClass::kAtomic, {"REDG", "REDAS"}},  // red.global, red.shared::cluster
      {SassClass::kWarp, {"ELECT"}},            // elect.sync
      {SassClass::kInteger, {"VIADD", "VIMNMX", "VIMNMX3"}},
      {SassClass::kBarrier, {"UCGABAR_ARV", "UCGABAR_WAIT"}},  // barrier.cluster arrive / wait
      {SassClass::kOther, {"CCTL"}},
  };
  return table;
}

SassArch make_sm90() {
  SassArch a = generic_sass_arch();
  a.name = "sm_90";
  a.cc_major = 9;
  a.cc_minor = 0;
  for (const auto& row : hopper_opcodes())
    for (const char* opcode : row.opcodes) a.opcodes[opcode] = row.cls;
  return a;
}

}  // namespace

const SassArch& sass_arch_sm90() {
  static const SassArch sm90 = make_sm90();
  return sm90;
}

}  // namespace kp::profile

#include "profile/sass/sass_summary.h"

#include <charconv>

#include <fmt/format.h>

namespace kp::profile {

namespace {

// Access width in bits of a global load or store, from its modifiers.
int access_bits(const SassInstruction& inst) {
  for (const auto& m : inst.modifiers) {
    if (m == "U8" || m == "S8") return 8;
    if (m == "U16" || m == "S16") return 16;
    if (m == "64") return 64;
    if (m == "128") return 128;
    if (m == "256") return 256;
  }
  return 32;
}

bool is_mma(const SassInstruction& inst, SassClass c) {
  return c == SassClass::kTensorWarp || (c == SassClass::kTensorWarpgroup && inst.opcode != "WARPGROUP");
}

// Where the alignment padding starts: the trailing NOPs and the self-branch "BRA <own pc>"
// before them.
size_t padding_start(const std::vector<SassInstruction>& insts) {
  size_t end = insts.size();
  while (end > 0 && insts[end - 1].opcode == "NOP" && insts[end - 1].predicate.empty()) --end;
  if (end > 0) {
    const SassInstruction& last = insts[end - 1];
    uint64_t target = 0;
    std::string_view op = last.operands;
    if (last.opcode == "BRA" && last.predicate.empty() && op.size() > 2 && op.substr(0, 2) == "0x") {
      auto [p, ec] = std::from_chars(op.data() + 2, op.data() + op.size(), target, 16);
      if (ec == std::errc() && p == op.data() + op.size() && target == last.pc) --end;
    }
  }
  return end;
}

int64_t sum(const std::map<int, int64_t>& m) {
  int64_t n = 0;
  for (const auto& [bits, count] : m) n += count;
  return n;
}

nlohmann::json bits_json(const std::map<int, int64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [bits, count] : m) j[std::to_string(bits)] = count;
  return j;
}

// "128-bit global loads 4 of 4" / "global loads 0": the share of the widest width seen.
std::string widths_text(const std::map<int, int64_t>& m, const char* what) {
  int64_t total = sum(m);
  if (total == 0) return fmt::format("no {}", what);
  auto widest = m.rbegin();
  return fmt::format("{}-bit {} {} of {}", widest->first, what, widest->second, total);
}

}  // namespace

int64_t SassSummary::tensor_instructions() const {
  int64_t n = 0;
  for (const auto& [shape, count] : tensor_shapes) n += count;
  return n;
}
int64_t SassSummary::global_loads() const { return sum(global_load_bits); }
int64_t SassSummary::global_stores() const { return sum(global_store_bits); }

SassSummary summarize(const SassFunction& function, const SassArch& arch) {
  SassSummary s;
  s.arch = function.arch;
  size_t end = padding_start(function.instructions);
  for (size_t i = 0; i < end; ++i) {
    const SassInstruction& inst = function.instructions[i];
    SassClass c = arch.classify(inst);
    ++s.instructions;
    ++s.by_class[static_cast<int>(c)];
    ++s.by_opcode[inst.opcode];
    if (c == SassClass::kGlobalLoad) ++s.global_load_bits[access_bits(inst)];
    if (c == SassClass::kGlobalStore) ++s.global_store_bits[access_bits(inst)];
    if (inst.opcode == "LDL") ++s.local_loads;
    if (inst.opcode == "STL") ++s.local_stores;
    if (is_mma(inst, c)) ++s.tensor_shapes[inst.full_opcode()];
    if (c == SassClass::kSpecialFunction && inst.opcode == "MUFU")
      ++s.mufu[inst.modifiers.empty() ? std::string("?") : inst.modifiers[0]];
    if (c == SassClass::kFp32) {
      if (inst.opcode.rfind("FFMA", 0) == 0) ++s.fp32_fma;
      if (inst.opcode.rfind("FADD", 0) == 0) ++s.fp32_add;
      if (inst.opcode.rfind("FMUL", 0) == 0) ++s.fp32_mul;
    }
  }
  return s;
}

std::vector<KernelSass> join_with_ptxas(const SassListing& listing, const build::PtxasReport& report,
                                        const SassArch& arch) {
  std::vector<const build::KernelResources*> entries;
  for (const auto& k : report.kernels) entries.push_back(&k);
  for (const auto& k : report.device_functions) entries.push_back(&k);
  std::vector<KernelSass> out;
  for (const auto& f : listing.functions) {
    KernelSass k;
    k.mangled_name = f.mangled_name;
    k.name = f.name;
    k.sass = summarize(f, arch);
    const build::KernelResources* exact = nullptr;
    const build::KernelResources* by_name = nullptr;
    int name_matches = 0;
    for (const auto* e : entries) {
      if (e->mangled_name != f.mangled_name) continue;
      if (e->arch == f.arch && exact == nullptr) exact = e;
      ++name_matches;
      by_name = e;
    }
    if (exact != nullptr)
      k.resources = *exact;
    else if (name_matches == 1)
      k.resources = *by_name;
    out.push_back(std::move(k));
  }
  return out;
}

nlohmann::json to_json(const SassSummary& s) {
  nlohmann::json by_class = nlohmann::json::object();
  for (int i = 0; i < kSassClassCount; ++i)
    if (s.by_class[i] != 0) by_class[to_string(static_cast<SassClass>(i))] = s.by_class[i];
  return {
      {"arch", s.arch},
      {"instructions", s.instructions},
      {"by_class", by_class},
      {"by_opcode", s.by_opcode},
      {"global_load_bits", bits_json(s.global_load_bits)},
      {"global_store_bits", bits_json(s.global_store_bits)},
      {"global_loads", s.global_loads()},
      {"global_stores", s.global_stores()},
      {"local_loads", s.local_loads},
      {"local_stores", s.local_stores},
      {"tensor_shapes", s.tensor_shapes},
      {"tensor_instructions", s.tensor_instructions()},
      {"mufu", s.mufu},
      {"fp32_fma", s.fp32_fma},
      {"fp32_add", s.fp32_add},
      {"fp32_mul", s.fp32_mul},
  };
}

nlohmann::json to_json(const KernelSass& k) {
  nlohmann::json resources = nullptr;
  if (k.resources) {
    const auto& r = *k.resources;
    resources = {
        {"registers", r.registers},
        {"register_limit", r.register_limit},
        {"barriers", r.barriers},
        {"shared_bytes", r.shared_bytes},
        {"stack_frame_bytes", r.stack_frame_bytes},
        {"spill_store_bytes", r.spill_store_bytes},
        {"spill_load_bytes", r.spill_load_bytes},
    };
  }
  return {{"mangled_name", k.mangled_name}, {"name", k.name}, {"sass", to_json(k.sass)}, {"resources", resources}};
}

std::string describe(const KernelSass& k) {
  const SassSummary& s = k.sass;
  std::string line = fmt::format("{} [{}]: {} instructions", k.name, s.arch, s.instructions);
  if (k.resources) line += fmt::format(", {} registers", k.resources->registers);
  line += "; " + widths_text(s.global_load_bits, "global loads");
  line += ", " + widths_text(s.global_store_bits, "stores");
  bool ptxas_spills = k.resources && k.resources->has_spills();
  if (ptxas_spills) {
    line += fmt::format("; spills: {} STL, {} LDL (ptxas: {} B stores, {} B loads)", s.local_stores, s.local_loads,
                        k.resources->spill_store_bytes, k.resources->spill_load_bytes);
  } else if (s.local_loads + s.local_stores > 0) {
    line += fmt::format("; local memory: {} STL, {} LDL{}", s.local_stores, s.local_loads,
                        k.resources ? " (no ptxas spills: a local array or call stack)" : "");
  } else {
    line += "; no spills";
  }
  line += fmt::format("; {} tensor instructions", s.tensor_instructions());

  std::vector<std::string> extra;
  if (!s.tensor_shapes.empty()) {
    std::string shapes;
    for (const auto& [shape, n] : s.tensor_shapes)
      shapes += fmt::format("{}{} {}", shapes.empty() ? "" : ", ", n, shape);
    extra.push_back("tensor: " + shapes);
  }
  int64_t tma = s.count(SassClass::kTma), mbar = s.count(SassClass::kMbarrier);
  int64_t async = s.count(SassClass::kAsyncCopy);
  if (tma + mbar + async > 0) extra.push_back(fmt::format("TMA {}, mbarrier {}, cp.async {}", tma, mbar, async));
  if (!s.mufu.empty()) {
    std::string m;
    for (const auto& [fn, n] : s.mufu) m += fmt::format("{}{} {}", m.empty() ? "" : ", ", n, fn);
    extra.push_back("MUFU " + m);
  }
  if (s.count(SassClass::kFp64) > 0) extra.push_back(fmt::format("FP64 {}", s.count(SassClass::kFp64)));
  if (auto bar = s.by_opcode.find("BAR"); bar != s.by_opcode.end()) extra.push_back(fmt::format("BAR {}", bar->second));
  int64_t fp32 = s.fp32_fma + s.fp32_add + s.fp32_mul;
  if (fp32 > 0) extra.push_back(fmt::format("FP32 FFMA {} of {}", s.fp32_fma, fp32));
  if (!extra.empty()) {
    line += "\n";
    for (size_t i = 0; i < extra.size(); ++i) line += (i ? "; " : "") + extra[i];
  }
  return line;
}

}  // namespace kp::profile

// Measured ceilings per GPU (`kernelpro calibrate`): asking the worker to measure them, their
// JSON form, the on-disk store with one file per GPU, and the choice between a stored
// calibration and the datasheet (profile/datasheets.h) when a profile needs ceilings.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/worker_client.h"
#include "profile/ceilings.h"
#include "profile/datasheets.h"
#include "util/result.h"
#include "verdict/protocol.h"

namespace kp::profile {

std::optional<CeilingSource> ceiling_source_from_string(std::string_view s);  // "calibrated", "datasheet"

// The rate fields of Ceilings in report order: the JSON key (the field's name), a label for
// people and the unit ("B/s", "FLOP/s", "OP/s").
struct CeilingField {
  const char* key;
  const char* label;
  const char* unit;
  double Ceilings::*member;
};
const std::vector<CeilingField>& ceiling_fields();

// {"gpu","cc_major","cc_minor","sm_count","source","measured_at" (when set), one number per
// rate field, "sm_clock_mhz","method":{field: text}}. The worker's calibrate reply carries the
// same object (worker/calibrate.cc writes it).
nlohmann::json to_json(const Ceilings& c);
// The inverse. kInvalidInput naming the key when j is not an object, "gpu" or "source" is
// missing or not a string, the source is unknown, or a rate is not a non-negative number; a rate
// that is absent is 0 (unknown), unknown keys are ignored.
Result<Ceilings> ceilings_from_json(const nlohmann::json& j);

// The file name of a GPU's calibration: its name as a slug, its SM count and its memory in GiB
// (rounded), e.g. "NVIDIA H200", 132 SMs, 139.8 GiB -> "nvidia-h200-132sm-140gib". Two boards
// of one product share a key (and a calibration).
std::string gpu_key(const eval::DeviceInfo& device);

// One JSON file per GPU, `<dir>/<gpu_key>.json`: to_json of the ceilings plus "format": 1 and
// "gpu_key". The CLI chooses dir: $XDG_DATA_HOME/kernelpro/calibration, else
// ~/.local/share/kernelpro/calibration, or --store. Not thread-safe across writers of one GPU
// (the last rename wins; readers never see a partial file).
class CalibrationStore {
 public:
  explicit CalibrationStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path_for(const eval::DeviceInfo& device) const;

  // nullopt when this GPU has no file. kIo when the file cannot be read; kInvalidInput naming the
  // file when it is not valid JSON, not ceilings, or not a calibration (source "datasheet"),
  // saying to re-run `kernelpro calibrate`.
  Result<std::optional<Ceilings>> load(const eval::DeviceInfo& device) const;

  // Writes the file (creating dir), through a temporary file and an atomic rename. kIo naming the
  // path when the folder cannot be created or the file written.
  Status save(const eval::DeviceInfo& device, const Ceilings& ceilings) const;

 private:
  std::filesystem::path dir_;
};

enum class CalibrationDepth {
  kFull,   // the default: best of 7 launches per figure
  kQuick,  // best of 3, shorter launches (tests)
};

// Reads the ceilings out of a worker's calibrate reply ({"ok":true,"ceilings":{...}}): source
// calibrated. kProtocol when "ceilings" is missing or malformed, or its source is not
// "calibrated".
Result<Ceilings> ceilings_from_calibrate_reply(const nlohmann::json& reply);

// Asks the worker to measure this GPU (the "calibrate" op, a few seconds). Errors as
// WorkerClient::call (kUnavailable without a GPU, kTool when the worker fails or gives no reply
// within timeout_s) and ceilings_from_calibrate_reply.
Result<Ceilings> calibrate(eval::WorkerClient& worker, double timeout_s,
                           CalibrationDepth depth = CalibrationDepth::kFull);

// The ceilings a profile of `device` uses: the stored calibration when there is one (and
// *warning is cleared), else datasheet_ceilings(device) with *warning saying why, e.g.
// "this GPU was never calibrated; using datasheet ceilings for NVIDIA H200; run `kernelpro
// calibrate`", or, for a product without a datasheet row, "... using ceilings estimated from the
// sm_90 architecture for NVIDIA GH200 480GB (no datasheet) ...". A stored file that cannot be
// read is reported in the warning with the store's message and the datasheet is used. warning
// may be null.
Ceilings resolve_ceilings(const CalibrationStore& store, const eval::DeviceInfo& device, std::string* warning);

}  // namespace kp::profile

// The offline tuner's space: the KP_TUNE parameters a seed declares. A point gives each
// parameter one of its values; its neighbours move one parameter one step along its values in
// ascending order. A point becomes a candidate by rewriting the declarations so that the chosen
// value comes first (the default the build compiles in), so every tuned variant is an ordinary
// candidate file with its own hash, stored, built and evaluated like any other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "task/tune_params.h"

namespace kp::search {

using TunePoint = std::map<std::string, long long>;

class TuneSpace {
 public:
  explicit TuneSpace(std::vector<task::TuneParam> params);
  bool empty() const { return params_.empty(); }
  const std::vector<task::TuneParam>& params() const { return params_; }

  TunePoint defaults() const;  // each parameter's first value
  // The neighbours of `p`, in declaration order of the parameters, one step up then one down.
  std::vector<TunePoint> neighbours(const TunePoint& p) const;
  size_t size() const;  // points in the space

  // `source` with each KP_TUNE declaration's values reordered: p's value first, the others
  // ascending (so the text of a point does not depend on the source it is applied to).
  static std::string apply(const std::string& source, const TunePoint& p);
  static std::string describe(const TunePoint& p);  // "BLOCK=512 VEC=4"

 private:
  std::vector<task::TuneParam> params_;  // values sorted ascending; defaults kept apart
  TunePoint defaults_;
};

}  // namespace kp::search

// The parameters a finished `distsgd train` run wrote (parameters.pt in its run directory), for tests that compare
// runs bit for bit or to a tolerance.
#pragma once
#include <string>

#include "distsgd/train/checkpoint.hpp"

namespace distsgd::testing {

inline at::Tensor parameters_of(const std::string& run_dir) {
  return distsgd::train::load_parameters(run_dir + "/parameters.pt");
}

}  // namespace distsgd::testing

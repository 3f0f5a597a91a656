// Ready-made studies (`distsgd study --preset NAME`): the seed papers' experiments at this machine's scale, and the
// demo of `make demo`. README.md ("Studies and reports") says, for each, what the paper measured and what the
// preset measures instead.
#pragma once
#include "distsgd/experiment/study_spec.hpp"

#include <string>
#include <vector>

namespace distsgd::experiment {

struct StudyPreset {
  std::string name;
  std::string summary;  // one line, for --list-presets
  std::string json;     // the specification, as a user would write it
};

const std::vector<StudyPreset>& study_presets();
std::vector<std::string> study_preset_names();
// The preset's parsed specification; throws Error listing the presets when there is none of that name.
StudySpec preset_study_spec(const std::string& name);

}  // namespace distsgd::experiment

#include "distsgd/sim/analytical/bucket_layout.hpp"

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

BucketLayout make_bucket_layout(const ModelProfile& profile, double first_bytes, double bucket_bytes) {
  require(!profile.tensors.empty(), "the profile has no tensors");
  BucketLayout layout;
  double bytes = 0;
  size_t first = 0, last = profile.tensors.size() - 1;
  bool open = false;
  for (size_t t = profile.tensors.size(); t-- > 0;) {
    const double tensor = static_cast<double>(profile.tensors[t].parameters * profile.bytes_per_parameter);
    const double cap = layout.size() == 0 ? first_bytes : bucket_bytes;
    if (open && bytes + tensor > cap) {
      layout.first.push_back(first);
      layout.last.push_back(last);
      layout.bytes.push_back(bytes);
      bytes = 0;
      last = t;
    }
    open = true;
    first = t;
    bytes += tensor;
  }
  layout.first.push_back(first);
  layout.last.push_back(last);
  layout.bytes.push_back(bytes);
  return layout;
}

}  // namespace distsgd::sim

// The cores (hardware threads) of this host, at least 1: what the oversubscription warning, the compute capacity's
// bound, validate's and commbench's figures count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>

namespace distsgd {

inline int64_t host_cores() { return std::max<int64_t>(1, std::thread::hardware_concurrency()); }

}  // namespace distsgd

// BSP's local aggregation pipelined with backward (--local-aggregation host with --overlap wfbp), as BytePS and
// TensorFlow's replicated training overlap theirs: each member of a host sends every gradient bucket to the host's
// leader as soon as backward has produced it (HostBucketSends); the leader's aggregating thread (HostBucketSums)
// takes the buckets in order, waits for its own and every member's copy, sums them in rank order (the whole-gradient
// sum's order, element by element: the same parameters as without overlap) and pushes the sum's pieces, while
// backward goes on. The parameters go back to the members after the last reply, as without overlap.
#pragma once
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/algo/ps/host_groups.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/runtime.hpp"

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace distsgd {
class Timeline;
}
namespace distsgd::models {
class Model;
}

namespace distsgd::algo::ps {

class HostBucketSums {
 public:
  // `gradients`: the leader's flat gradient; `sum`: where the host's sum goes (what `push` sends of bucket b).
  HostBucketSums(comm::Communicator& comm, models::Model& model, std::vector<Bucket> buckets, HostGroup group,
                 at::Tensor gradients, at::Tensor sum, std::function<void(size_t bucket)> push, Timeline& timeline);
  ~HostBucketSums();

  // Before backward: posts the receives of the members' buckets and starts the aggregating thread.
  void start();
  // After backward: waits until every bucket is summed and pushed; rethrows what stopped the thread.
  void finish();

 private:
  void sum_buckets();
  void sum_bucket(size_t bucket);

  comm::Communicator& comm_;
  std::vector<Bucket> buckets_;
  HostGroup group_;
  at::Tensor gradients_, sum_;
  std::vector<at::Tensor> members_;                // the members' gradients, in rank order
  std::vector<std::vector<comm::Work>> received_;  // per bucket, one receive per member
  std::function<void(size_t)> push_;
  Timeline& timeline_;
  std::unique_ptr<BucketReadyTracker> tracker_;
  std::mutex mutex_;
  runtime::Condition produced_;
  size_t backward_done_ = 0;  // buckets backward has produced this step
  runtime::Thread thread_;
  std::exception_ptr failure_;
};

// A member's side: each bucket to the leader as backward produces it.
class HostBucketSends {
 public:
  HostBucketSends(comm::Communicator& comm, models::Model& model, std::vector<Bucket> buckets, int64_t leader,
                  at::Tensor gradients);
  ~HostBucketSends();
  void start();   // before backward
  void finish();  // after backward: hands out what backward did not and waits for every send

 private:
  comm::Communicator& comm_;
  int64_t leader_;
  at::Tensor gradients_;
  std::vector<comm::Work> sends_;
  std::unique_ptr<BucketReadyTracker> tracker_;
};

}  // namespace distsgd::algo::ps

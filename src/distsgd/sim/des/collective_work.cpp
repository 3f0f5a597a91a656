#include "distsgd/sim/des/collective_work.hpp"

#include <string>
#include <utility>

namespace distsgd::sim {

void launch_collective(DesContext& c, int64_t worker, CollectiveKind kind, double bytes, const char* name,
                       CollectiveWork& work, size_t index) {
  work.done = false;
  work.waiter = nullptr;
  c.bytes_sent[static_cast<size_t>(worker)] += collective_bytes_sent(kind, c.workers, bytes);
  const double start = c.queue.now();
  c.collectives.launch(worker, kind, bytes, [&c, worker, name, index, start, &work] {
    if (c.trace.enabled()) {
      c.span(worker, index == SIZE_MAX ? name : name + std::to_string(index), start, Timeline::kCommunication);
    }
    work.done = true;
    if (work.waiter) {
      Next waiter = std::move(work.waiter);
      work.waiter = nullptr;
      waiter();
    }
  });
}

void wait_for(DesContext& c, int64_t worker, CollectiveWork& work, Next next) {
  if (work.done) return next();
  const double start = c.queue.now();
  work.waiter = [&c, worker, start, next = std::move(next)] {
    c.span(worker, "wait", start);
    next();
  };
}

void powersgd_exchange(DesContext& c, int64_t worker, const PowerSgdStep& step, CollectiveWork& work, Next then) {
  const double product = step.matmul_seconds / 3;
  // Runs `after` once the allreduce of `bytes` is done (at once when there is nothing to send).
  auto allreduce = [&c, worker, &work](double bytes, const char* name, Next after) {
    if (bytes <= 0 || c.workers == 1) return after();
    launch_collective(c, worker, CollectiveKind::kAllreduce, bytes, name, work);
    wait_for(c, worker, work, std::move(after));
  };
  auto approximate = [&c, worker, product, then] { c.run(worker, "compress", product, then); };
  auto second = [&c, worker, product, step, allreduce, approximate] {
    c.run(worker, "compress", product,
          [step, allreduce, approximate] { allreduce(step.q_bytes, "allreduce Q", approximate); });
  };
  c.run(worker, "compress", c.update_seconds(worker, c.model_bytes()) + product, [step, allreduce, second] {
    allreduce(step.uncompressed_bytes, "allreduce uncompressed tensors",
              [step, allreduce, second] { allreduce(step.p_bytes, "allreduce P", second); });
  });
}

}  // namespace distsgd::sim

// The sum over the workers of a float vector sent in 4, 8 or 16 bits per value (Streaming DiLoCo's quantised outer
// gradients; torchft's allreduce_quantized takes the same route): each worker quantises its vector in W equal
// slices, an alltoall gives worker j every worker's slice j, which it dequantises and sums in rank order (a
// reduce-scatter), quantises again and allgathers. Two messages of (W-1)/W of the quantised size per worker, as a
// ring allreduce's two halves.
//
// Format of one quantised slice: blocks of kBlock values, each a float32 minimum and a float32 step
// ((max - min) / (2^bits - 1), 0 for a constant block), then the values q = round((x - min) / step) as unsigned
// integers of `bits` bits, little-endian, packed (4 bits: two per byte, the first value in the low nibble). A value
// decodes to min + q * step; the error is at most step / 2 per quantisation.
#pragma once
#include "distsgd/comm/communicator.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace distsgd::algo::outer {

constexpr int64_t kBlock = 64;

// Bytes of a quantised slice of `values` floats (a multiple of kBlock).
int64_t quantized_bytes(int64_t values, int64_t bits);
// Quantises `values` (contiguous float, numel a multiple of kBlock) into `bytes` (uint8, quantized_bytes long).
void quantize(const at::Tensor& values, at::Tensor bytes, int64_t bits);
// The inverse: writes the decoded values into `values`.
void dequantize(const at::Tensor& bytes, at::Tensor values, int64_t bits);

// One quantised allreduce (sum) of `tensor` in two phases, so that the exchange can overlap inner steps:
// start() quantises and starts the alltoall; reduce() waits for it, sums this worker's slice and starts the
// allgather; finish() waits for that and writes the sum into the tensor. Every worker runs the phases in the
// same order (they are collectives).
class QuantizedAllreduce {
 public:
  QuantizedAllreduce(comm::Communicator& comm, at::Tensor tensor, int64_t bits);
  void start();
  void reduce();
  void finish();
  bool reduced() const { return reduced_; }
  int64_t bytes_sent() const { return bytes_sent_; }  // by this worker, both phases

 private:
  comm::Communicator& comm_;
  at::Tensor tensor_;
  int64_t bits_, workers_, slice_values_, slice_bytes_;
  at::Tensor padded_, outgoing_, incoming_, gathered_, reduced_bytes_;  // alive while in flight
  comm::Work work_;
  bool reduced_ = false;
  int64_t bytes_sent_ = 0;
};

}  // namespace distsgd::algo::outer

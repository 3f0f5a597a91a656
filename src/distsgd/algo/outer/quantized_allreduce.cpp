#include "distsgd/algo/outer/quantized_allreduce.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace distsgd::algo::outer {
namespace {

constexpr int64_t kHeaderBytes = 8;  // float minimum, float step

int64_t packed_bytes(int64_t values, int64_t bits) { return (values * bits + 7) / 8; }

void put_code(uint8_t* out, int64_t i, uint32_t q, int64_t bits) {
  if (bits == 4) {
    out[i / 2] = static_cast<uint8_t>(i % 2 == 0 ? (out[i / 2] & 0xF0) | q : (out[i / 2] & 0x0F) | (q << 4));
  } else if (bits == 8) {
    out[i] = static_cast<uint8_t>(q);
  } else {
    out[2 * i] = static_cast<uint8_t>(q & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(q >> 8);
  }
}

uint32_t code_at(const uint8_t* in, int64_t i, int64_t bits) {
  if (bits == 4) return i % 2 == 0 ? in[i / 2] & 0x0F : in[i / 2] >> 4;
  if (bits == 8) return in[i];
  return static_cast<uint32_t>(in[2 * i]) | (static_cast<uint32_t>(in[2 * i + 1]) << 8);
}

}  // namespace

int64_t quantized_bytes(int64_t values, int64_t bits) {
  const int64_t blocks = values / kBlock;
  return blocks * (kHeaderBytes + packed_bytes(kBlock, bits));
}

void quantize(const at::Tensor& values, at::Tensor bytes, int64_t bits) {
  require(values.numel() % kBlock == 0, "quantize: the values are not whole blocks");
  const float* x = values.data_ptr<float>();
  uint8_t* out = bytes.data_ptr<uint8_t>();
  const uint32_t top = (1u << bits) - 1;
  const int64_t block_bytes = kHeaderBytes + packed_bytes(kBlock, bits);
  for (int64_t b = 0; b < values.numel() / kBlock; ++b) {
    const float* v = x + b * kBlock;
    uint8_t* block = out + b * block_bytes;
    const auto [low, high] = std::minmax_element(v, v + kBlock);
    const float minimum = *low;
    const float step = (*high - *low) / static_cast<float>(top);
    std::memcpy(block, &minimum, 4);
    std::memcpy(block + 4, &step, 4);
    uint8_t* codes = block + kHeaderBytes;
    std::memset(codes, 0, static_cast<size_t>(packed_bytes(kBlock, bits)));
    for (int64_t i = 0; i < kBlock; ++i) {
      const float scaled = step > 0 ? (v[i] - minimum) / step : 0.0f;
      const auto q = static_cast<uint32_t>(std::clamp(std::nearbyint(scaled), 0.0f, static_cast<float>(top)));
      put_code(codes, i, q, bits);
    }
  }
}

void dequantize(const at::Tensor& bytes, at::Tensor values, int64_t bits) {
  float* x = values.data_ptr<float>();
  const uint8_t* in = bytes.data_ptr<uint8_t>();
  const int64_t block_bytes = kHeaderBytes + packed_bytes(kBlock, bits);
  for (int64_t b = 0; b < values.numel() / kBlock; ++b) {
    const uint8_t* block = in + b * block_bytes;
    float minimum = 0, step = 0;
    std::memcpy(&minimum, block, 4);
    std::memcpy(&step, block + 4, 4);
    for (int64_t i = 0; i < kBlock; ++i) {
      x[b * kBlock + i] = minimum + static_cast<float>(code_at(block + kHeaderBytes, i, bits)) * step;
    }
  }
}

QuantizedAllreduce::QuantizedAllreduce(comm::Communicator& comm, at::Tensor tensor, int64_t bits)
    : comm_(comm), tensor_(std::move(tensor)), bits_(bits), workers_(comm.worker_count()) {
  const int64_t n = tensor_.numel();
  const int64_t blocks_per_slice = std::max<int64_t>(1, (n + kBlock * workers_ - 1) / (kBlock * workers_));
  slice_values_ = blocks_per_slice * kBlock;
  slice_bytes_ = quantized_bytes(slice_values_, bits_);
  padded_ = at::zeros({slice_values_ * workers_}, tensor_.options());
  outgoing_ = at::empty({slice_bytes_ * workers_}, at::kByte);
  incoming_ = at::empty({slice_bytes_ * workers_}, at::kByte);
  gathered_ = at::empty({slice_bytes_ * workers_}, at::kByte);
  reduced_bytes_ = at::empty({slice_bytes_}, at::kByte);
}

void QuantizedAllreduce::start() {
  padded_.narrow(0, 0, tensor_.numel()).copy_(tensor_.reshape({-1}));
  for (int64_t j = 0; j < workers_; ++j) {
    quantize(padded_.narrow(0, j * slice_values_, slice_values_), outgoing_.narrow(0, j * slice_bytes_, slice_bytes_),
             bits_);
  }
  work_ = comm_.alltoall(incoming_, outgoing_);
  bytes_sent_ += (workers_ - 1) * slice_bytes_;
}

void QuantizedAllreduce::reduce() {
  work_.wait();
  // This worker's slice: every worker's part of it, summed in rank order.
  auto mine = at::zeros({slice_values_}, tensor_.options());
  auto decoded = at::empty({slice_values_}, tensor_.options());
  for (int64_t i = 0; i < workers_; ++i) {
    dequantize(incoming_.narrow(0, i * slice_bytes_, slice_bytes_), decoded, bits_);
    mine.add_(decoded);
  }
  quantize(mine, reduced_bytes_, bits_);
  std::vector<at::Tensor> outputs;
  for (int64_t j = 0; j < workers_; ++j) outputs.push_back(gathered_.narrow(0, j * slice_bytes_, slice_bytes_));
  work_ = comm_.allgather(outputs, reduced_bytes_);
  bytes_sent_ += (workers_ - 1) * slice_bytes_;
  reduced_ = true;
}

void QuantizedAllreduce::finish() {
  if (!reduced_) reduce();
  work_.wait();
  for (int64_t j = 0; j < workers_; ++j) {
    dequantize(gathered_.narrow(0, j * slice_bytes_, slice_bytes_), padded_.narrow(0, j * slice_values_, slice_values_),
               bits_);
  }
  tensor_.reshape({-1}).copy_(padded_.narrow(0, 0, tensor_.numel()));
}

}  // namespace distsgd::algo::outer

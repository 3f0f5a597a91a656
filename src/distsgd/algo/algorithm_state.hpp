// An algorithm's part of a checkpoint: named tensors and numbers (momentum, DGC accumulators, SSP clocks, push-sum
// weights, ...). Workers and servers fill one in save_state() and read it back in load_state(); train/ stores it in
// the checkpoint file of that rank, so algorithms never see file formats.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distsgd::algo {

class AlgorithmState {
 public:
  // Stores a copy (later changes of `value` do not reach the checkpoint); a name given twice keeps the last; an
  // undefined tensor stores nothing (and copy_to into an undefined tensor does nothing).
  void put(const std::string& name, const at::Tensor& value);
  void put_integer(const std::string& name, int64_t value);
  void put_real(const std::string& name, double value);
  void put_integers(const std::string& name, const std::vector<int64_t>& values);  // counters per worker, clocks

  bool has(const std::string& name) const;
  // Copies the saved tensor into `into`; throws distsgd::Error naming the entry when it is missing or of another
  // size (a checkpoint of another configuration).
  void copy_to(const std::string& name, at::Tensor into) const;
  // The same for put_integers(): `into` keeps its length, which the saved entry must have.
  void copy_integers_to(const std::string& name, std::vector<int64_t>& into) const;
  const at::Tensor& tensor(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;

  const std::map<std::string, at::Tensor>& tensors() const { return tensors_; }
  const std::map<std::string, int64_t>& integers() const { return integers_; }
  const std::map<std::string, double>& reals() const { return reals_; }

 private:
  std::map<std::string, at::Tensor> tensors_;
  std::map<std::string, int64_t> integers_;
  std::map<std::string, double> reals_;
};

}  // namespace distsgd::algo

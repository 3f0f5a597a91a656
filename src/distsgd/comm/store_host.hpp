// The rendezvous store hosted by the local launcher, on a free port, for the processes it starts.
#pragma once
#include <memory>

namespace distsgd::comm {

class StoreHost {
 public:
  StoreHost();  // listens on 127.0.0.1, on a port the OS picks
  ~StoreHost();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace distsgd::comm

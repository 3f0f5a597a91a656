#include "distsgd/comm/store_host.hpp"

#include "distsgd/comm/listen_address.hpp"
#include "distsgd/core/error.hpp"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace distsgd::comm {

struct StoreHost::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

StoreHost::StoreHost() : impl_(std::make_unique<Impl>()) {
  c10d::TCPStoreOptions options;
  options.port = 0;
  options.isServer = true;
  options.waitWorkers = false;
  try {
    const ListenOn loopback("127.0.0.1");  // TCPStore alone would listen on every interface
    impl_->store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw Error(std::string("cannot start the rendezvous store: ") + e.what());
  }
}

StoreHost::~StoreHost() = default;

int StoreHost::port() const { return impl_->store->getPort(); }

}  // namespace distsgd::comm

#include "distsgd/core/runtime.hpp"

#include <exception>

namespace distsgd::runtime {
namespace {
thread_local Executive* current = nullptr;
}  // namespace

Executive* executive() { return current; }
void set_executive(Executive* executive) { current = executive; }

Thread::Thread(std::string name, std::function<void()> body) : executive_(executive()) {
  if (executive_) {
    actor_ = executive_->start(std::move(name), std::move(body));
  } else {
    thread_ = std::thread(std::move(body));
  }
}

Thread& Thread::operator=(Thread&& other) noexcept {
  if (joinable()) std::terminate();
  thread_ = std::move(other.thread_);
  executive_ = other.executive_;
  actor_ = other.actor_;
  other.actor_ = -1;
  return *this;
}

Thread::~Thread() {
  if (joinable()) std::terminate();
}

void Thread::join() {
  if (actor_ >= 0) {
    executive_->join(actor_);
    actor_ = -1;
    return;
  }
  thread_.join();
}

void Thread::detach() {
  if (actor_ >= 0) {
    actor_ = -1;
    return;
  }
  thread_.detach();
}

}  // namespace distsgd::runtime

// The NFQUEUE delay line between two network namespaces joined by a veth pair: added round-trip time, loss, order
// under jitter, release at stop, refusals, and (disabled by default) TCP bulk throughput and the delay line's CPU
// cost.
#include "distsgd/cluster/delay_line.hpp"
#include "distsgd/cluster/network_namespace.hpp"
#include "distsgd/core/error.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace dc = distsgd::cluster;
using Clock = std::chrono::steady_clock;

constexpr const char* kAddressA = "10.99.0.1";
constexpr const char* kAddressB = "10.99.0.2";

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

sockaddr_in address_of(const char* ip, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, ip, &address.sin_addr);
  return address;
}

// A socket that closes itself.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A socket of `type` made inside `ns` and bound to ip:port; a UDP socket also gets a large receive buffer, so that
// losses are the delay line's only.
Socket bound_socket(const dc::NetworkNamespace& ns, int type, const char* ip, uint16_t port) {
  int fd = -1;
  ns.run_inside([&] {
    fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    distsgd::require(fd >= 0, "socket");
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (type == SOCK_DGRAM) {
      const int size = 8 << 20;
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    }
    const sockaddr_in address = address_of(ip, port);
    distsgd::require(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0, "bind");
  });
  return Socket(fd);
}

void connect_to(const Socket& socket, const char* ip, uint16_t port) {
  const sockaddr_in address = address_of(ip, port);
  ASSERT_EQ(::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0)
      << std::strerror(errno);
}

// Receives one datagram, or returns -1 after `timeout_ms` of silence.
ssize_t receive(const Socket& socket, void* buffer, size_t size, int timeout_ms) {
  pollfd p{socket.fd(), POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return -1;
  return ::recv(socket.fd(), buffer, size, 0);
}

class DelayLineTest : public ::testing::Test {
 protected:
  // Two namespaces, A and B, each with an eth0 that is one end of the same veth pair; A is 10.99.0.1, B 10.99.0.2.
  void SetUp() override {
    if (!dc::has_network_admin()) GTEST_SKIP() << "needs CAP_NET_ADMIN (run as root) to build network namespaces";
    a_.emplace(dc::NetworkNamespace::create());
    b_.emplace(dc::NetworkNamespace::create());
    const std::string b_path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(b_->fd());
    a_->run_command_inside({"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b_path});
    a_->run_command_inside({"ip", "addr", "add", std::string(kAddressA) + "/24", "dev", "eth0"});
    b_->run_command_inside({"ip", "addr", "add", std::string(kAddressB) + "/24", "dev", "eth0"});
    a_->run_command_inside({"ip", "link", "set", "eth0", "up"});
    b_->run_command_inside({"ip", "link", "set", "eth0", "up"});
  }

  const dc::NetworkNamespace& a() const { return *a_; }
  const dc::NetworkNamespace& b() const { return *b_; }

  // Sends one datagram each way and waits for it, so that ARP is resolved before the delay line goes in.
  void warm_up(const Socket& from_a, const Socket& from_b) {
    char byte = 0;
    for (int attempt = 0; attempt < 50; ++attempt) {
      ASSERT_GE(::send(from_a.fd(), &byte, 1, 0), 0) << std::strerror(errno);
      if (receive(from_b, &byte, 1, 100) == 1) break;
    }
    ASSERT_GE(::send(from_b.fd(), &byte, 1, 0), 0) << std::strerror(errno);
    ASSERT_EQ(receive(from_a, &byte, 1, 1000), 1);
    // When ARP took longer than one attempt's wait, the repeated warm-up datagrams were queued behind it and arrive
    // together: drain them, so that a test reads only its own datagrams.
    while (receive(from_b, &byte, 1, 50) == 1) {
    }
    while (receive(from_a, &byte, 1, 50) == 1) {
    }
  }

  // A UDP socket on each host, bound to `port` and connected to the other's, the path warmed up.
  std::pair<Socket, Socket> connected_udp_pair(uint16_t port) {
    Socket from_a = bound_socket(a(), SOCK_DGRAM, kAddressA, port);
    Socket from_b = bound_socket(b(), SOCK_DGRAM, kAddressB, port);
    connect_to(from_a, kAddressB, port);
    connect_to(from_b, kAddressA, port);
    warm_up(from_a, from_b);
    return {std::move(from_a), std::move(from_b)};
  }

 private:
  std::optional<dc::NetworkNamespace> a_, b_;
};

// Echoes datagrams on `socket` until destroyed.
class EchoServer {
 public:
  explicit EchoServer(const Socket& socket)
      : thread_([this, fd = socket.fd()] {
          char buffer[2048];
          while (!stop_) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            sockaddr_in peer{};
            socklen_t length = sizeof peer;
            const ssize_t n = ::recvfrom(fd, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&peer), &length);
            if (n > 0) ::sendto(fd, buffer, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer), length);
          }
        }) {}
  ~EchoServer() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

double median_round_trip_ms(const Socket& client, int count) {
  std::vector<double> times;
  char message[64] = {};
  for (int i = 0; i < count; ++i) {
    const Clock::time_point start = Clock::now();
    if (::send(client.fd(), message, sizeof message, 0) < 0) continue;
    if (receive(client, message, sizeof message, 1000) > 0) times.push_back(milliseconds_since(start));
  }
  if (times.empty()) return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

TEST_F(DelayLineTest, AddsTheDelayOfBothHostsToTheRoundTrip) {
  auto [client, server] = connected_udp_pair(7000);
  EchoServer echo(server);
  const double base_ms = median_round_trip_ms(client, 20);
  ASSERT_GT(base_ms, 0);

  dc::DelayLine line(1);
  line.add_host(a(), "eth0", {0.005, 0, 0});
  line.add_host(b(), "eth0", {0.005, 0, 0});
  line.start();
  const double delayed_ms = median_round_trip_ms(client, 20);
  line.stop();
  std::cout << "round trip: " << base_ms << " ms without, " << delayed_ms << " ms with 5 ms each way\n";
  EXPECT_GE(delayed_ms - base_ms, 9.0);
  EXPECT_LE(delayed_ms - base_ms, 16.0);
  EXPECT_GE(line.counts(0).packets, 20u);
  EXPECT_GE(line.counts(1).packets, 20u);
  EXPECT_EQ(line.counts(0).dropped, 0u);
}

// Sends numbered datagrams from A (loss 0.3) to B; returns the numbers that arrived.
std::vector<bool> send_through_loss(const dc::NetworkNamespace& a, const dc::NetworkNamespace& b, const Socket& sender,
                                    const Socket& receiver, int count, uint64_t seed, dc::DelayLine::Counts* counts) {
  dc::DelayLine line(seed);
  line.add_host(a, "eth0", {0, 0, 0.3});
  line.add_host(b, "eth0", {});  // A's losses happen on arrival at B
  line.start();
  char message[100] = {};
  for (int i = 0; i < count; ++i) {
    std::memcpy(message, &i, sizeof i);
    EXPECT_EQ(::send(sender.fd(), message, sizeof message, 0), 100);
  }
  std::vector<bool> arrived(static_cast<size_t>(count));
  while (receive(receiver, message, sizeof message, 300) > 0) {
    int i;
    std::memcpy(&i, message, sizeof i);
    arrived.at(static_cast<size_t>(i)) = true;
  }
  line.stop();
  *counts = line.counts(0);
  return arrived;
}

TEST_F(DelayLineTest, DropsTheGivenFractionAndCountsIt) {
  auto [sender, receiver] = connected_udp_pair(7001);

  constexpr int kSent = 2000;
  dc::DelayLine::Counts counts;
  const std::vector<bool> arrived = send_through_loss(a(), b(), sender, receiver, kSent, 7, &counts);
  const auto received = static_cast<int>(std::count(arrived.begin(), arrived.end(), true));
  const double lost = 1.0 - static_cast<double>(received) / kSent;
  std::cout << "loss 0.3: " << kSent - received << " of " << kSent << " lost (" << lost
            << "), counts: " << counts.packets << " packets, " << counts.dropped << " dropped, " << counts.bytes
            << " bytes\n";
  EXPECT_GE(lost, 0.22);
  EXPECT_LE(lost, 0.38);
  EXPECT_EQ(counts.packets, static_cast<uint64_t>(kSent));
  EXPECT_EQ(counts.dropped, static_cast<uint64_t>(kSent - received));
  EXPECT_EQ(counts.bytes, kSent * (20u + 8u + 100u));  // IPv4 and UDP headers

  // The same seed loses the same datagrams.
  dc::DelayLine::Counts again;
  EXPECT_EQ(send_through_loss(a(), b(), sender, receiver, kSent, 7, &again), arrived);
}

TEST_F(DelayLineTest, KeepsOrderUnderJitter) {
  auto [sender, receiver] = connected_udp_pair(7002);

  dc::DelayLine line(3);
  line.add_host(a(), "eth0", {0.003, 0.002, 0});
  line.add_host(b(), "eth0", {});
  line.start();
  // One datagram every 0.5 ms: with delays spread over 1..5 ms, most would overtake each other if order were not
  // kept. Both namespaces share the clock, so the one-way delay is read directly.
  constexpr int kSent = 500;
  std::thread send_thread([&, fd = sender.fd()] {  // (a structured binding cannot be captured before C++20)
    for (int64_t sequence = 0; sequence < kSent; ++sequence) {
      const int64_t message[2] = {sequence, now_ns()};
      ::send(fd, message, sizeof message, 0);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  std::vector<int64_t> sequences;
  std::vector<double> delays_ms;
  int64_t message[2];
  while (receive(receiver, message, sizeof message, 300) == sizeof message) {
    delays_ms.push_back(static_cast<double>(now_ns() - message[1]) / 1e6);
    sequences.push_back(message[0]);
  }
  send_thread.join();
  line.stop();

  ASSERT_EQ(sequences.size(), static_cast<size_t>(kSent));
  EXPECT_TRUE(std::is_sorted(sequences.begin(), sequences.end()));
  EXPECT_EQ(std::adjacent_find(sequences.begin(), sequences.end()), sequences.end());
  std::sort(delays_ms.begin(), delays_ms.end());
  const double median = delays_ms[delays_ms.size() / 2];
  std::cout << "jitter 2 ms around 3 ms: one-way delay min " << delays_ms.front() << " median " << median << " p99 "
            << delays_ms[delays_ms.size() * 99 / 100] << " max " << delays_ms.back() << " ms\n";
  EXPECT_GE(delays_ms.front(), 0.9);                     // delay - jitter = 1 ms
  EXPECT_GT(delays_ms.back() - delays_ms.front(), 1.0);  // the jitter shows
  EXPECT_GE(median, 2.0);  // 3 ms, less up to 0.5 ms where the timer aims early to make up for late wake-ups
  EXPECT_LE(median, 7.0);  // above 3 ms: keeping order holds early packets behind late ones
}

TEST_F(DelayLineTest, ReleasesHeldPacketsAtStop) {
  auto [sender, receiver] = connected_udp_pair(7003);

  auto line = std::make_unique<dc::DelayLine>(5);
  line->add_host(a(), "eth0", {10.0, 0, 0});
  line->add_host(b(), "eth0", {});
  line->start();
  char message[8] = {};
  for (int i = 0; i < 5; ++i) ASSERT_EQ(::send(sender.fd(), message, sizeof message, 0), 8);
  EXPECT_EQ(receive(receiver, message, sizeof message, 100), -1);  // held
  line->stop();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(receive(receiver, message, sizeof message, 500), 8) << "datagram " << i;
  // Once stopped, traffic passes undelayed: the stopped queue fails open, and once closed, the rule that stays
  // bypasses it.
  for (int closed = 0; closed < 2; ++closed) {
    if (closed) line.reset();
    const Clock::time_point start = Clock::now();
    ASSERT_EQ(::send(sender.fd(), message, sizeof message, 0), 8);
    EXPECT_EQ(receive(receiver, message, sizeof message, 500), 8);
    EXPECT_LT(milliseconds_since(start), 50);
  }
}

TEST_F(DelayLineTest, RefusesAnInterfaceWithoutAddressOrAQueueAlreadyBound) {
  try {
    dc::DelayLine line(1);
    line.add_host(a(), "eth9", {0.001, 0, 0});
    FAIL() << "added an interface without address";
  } catch (const distsgd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("eth9 of host 0 has no IPv4 address"), std::string::npos) << e.what();
  }

  dc::DelayLine first(1);
  first.add_host(a(), "eth0", {0.001, 0, 0});
  dc::DelayLine second(2);
  try {
    second.add_host(a(), "eth0", {0.001, 0, 0});
    FAIL() << "a second delay line bound the same queue";
  } catch (const distsgd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot bind nfqueue 0 for eth0"), std::string::npos) << e.what();
  }
}

// TCP bulk transfer from A to B; returns Gbit/s and prints the delay line thread's CPU time. Run by hand:
//   build/distsgd_torch_free_tests --gtest_filter='DelayLine*Bulk*' --gtest_also_run_disabled_tests
double bulk_gbits(const dc::NetworkNamespace& a, const dc::NetworkNamespace& b, uint16_t port, size_t bytes) {
  Socket listener = bound_socket(b, SOCK_STREAM, kAddressB, port);
  EXPECT_EQ(::listen(listener.fd(), 1), 0);
  Socket client = bound_socket(a, SOCK_STREAM, kAddressA, 0);
  connect_to(client, kAddressB, port);
  Socket server(::accept(listener.fd(), nullptr, nullptr));
  const Clock::time_point start = Clock::now();
  std::thread receiver([&] {
    std::vector<char> buffer(1 << 20);
    size_t total = 0;
    while (total < bytes) {
      const ssize_t n = ::recv(server.fd(), buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
  });
  std::vector<char> chunk(1 << 20, 'x');
  for (size_t sent = 0; sent < bytes;) {
    const ssize_t n = ::send(client.fd(), chunk.data(), std::min(chunk.size(), bytes - sent), 0);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  receiver.join();
  return static_cast<double>(bytes) * 8 / 1e9 / (milliseconds_since(start) / 1e3);
}

void print_bulk(const std::string& what, const dc::NetworkNamespace& a, const dc::NetworkNamespace& b, uint16_t port,
                double delay) {
  constexpr size_t kBytes = 200u << 20;
  if (delay < 0) {
    std::cout << what << ", no delay line: " << bulk_gbits(a, b, port, kBytes) << " Gbit/s\n";
    return;
  }
  dc::DelayLine line(1);
  line.add_host(a, "eth0", {delay, 0, 0});
  line.add_host(b, "eth0", {delay, 0, 0});
  line.start();
  const double gbits = bulk_gbits(a, b, port, kBytes);
  const double cpu = line.thread_cpu_seconds();
  line.stop();
  const auto data = line.counts(0), acks = line.counts(1);
  const double packets = static_cast<double>(data.packets + acks.packets);
  std::cout << what << ", delay " << delay * 1e3 << " ms each way: " << gbits << " Gbit/s; " << data.packets
            << " data packets of " << data.bytes / std::max<uint64_t>(data.packets, 1) << " bytes on average, "
            << acks.packets << " acks; delay line thread " << cpu << " s CPU, " << cpu * 1e6 / std::max(packets, 1.0)
            << " us per packet; overruns " << data.overruns + acks.overruns << "\n";
}

TEST_F(DelayLineTest, DISABLED_BulkTransferCost) {
  uint16_t port = 7100;
  for (double delay : {-1.0, 0.0, 0.0001, 0.001, 0.005}) print_bulk("TCP 200 MB", a(), b(), port++, delay);
  // A tbf with a small bucket cuts GSO super-packets into MTU-sized ones: the per-packet worst case.
  a().run_command_inside(
      {"tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "2gbit", "burst", "16kb", "limit", "4mb"});
  for (double delay : {-1.0, 0.0001, 0.001}) print_bulk("TCP 200 MB, tbf 2 Gbit/s", a(), b(), port++, delay);
}

}  // namespace

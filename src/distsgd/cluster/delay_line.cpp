#include "distsgd/cluster/delay_line.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>
#include <libnfnetlink/libnfnetlink.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>

#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"

namespace distsgd::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// Kernel-side room for held packets: 1 Gbit/s for 100 ms in 1500-byte packets is ~8,300, GSO packets are fewer.
constexpr uint32_t kQueueMaxlen = 65536;
// Netlink receive buffer: a message costs ~1 KB of it, so this absorbs bursts of ~30,000 packets.
constexpr unsigned kSocketBufferBytes = 32u << 20;
// Copy the IPv4 header (for the source address), not the rest: the kernel then also reports the packet's whole
// length (NFQA_CAP_LEN). A range of 0 would mean the whole packet.
constexpr unsigned kCopyRange = 20;
// Bound on how early the timer is aimed to make up for late wake-ups (see serve()).
constexpr Clock::duration kMaxLead = std::chrono::microseconds(500);
// Messages read from one socket before the thread looks at its timers again.
constexpr int kMessagesPerRound = 256;

std::string errno_text() { return std::strerror(errno); }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The packet's length: NFQA_CAP_LEN when the copy was cut short, otherwise the length of the copy. libnetfilter_queue
// has no getter for NFQA_CAP_LEN, so the attributes after `message` (NLMSG_DATA of the netlink message) are walked.
uint32_t packet_length(const nfgenmsg* message, nfq_data* data) {
  const auto* header = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(message) - NLMSG_HDRLEN);
  const char* end = reinterpret_cast<const char*>(header) + header->nlmsg_len;
  const char* at = reinterpret_cast<const char*>(message) + NLMSG_ALIGN(sizeof(nfgenmsg));
  while (at + sizeof(nlattr) <= end) {
    const auto* attribute = reinterpret_cast<const nlattr*>(at);
    if (attribute->nla_len < sizeof(nlattr) || at + attribute->nla_len > end) break;
    if ((attribute->nla_type & NLA_TYPE_MASK) == NFQA_CAP_LEN && attribute->nla_len >= NLA_HDRLEN + 4) {
      uint32_t length;
      std::memcpy(&length, at + NLA_HDRLEN, sizeof length);
      return ntohl(length);
    }
    at += NLA_ALIGN(attribute->nla_len);
  }
  unsigned char* payload = nullptr;
  const int copied = nfq_get_payload(data, &payload);
  return copied > 0 ? static_cast<uint32_t>(copied) : 0;
}

// The IPv4 addresses (network order) of `interface` in the calling thread's network namespace.
std::vector<uint32_t> ipv4_addresses(const std::string& interface) {
  ifaddrs* list = nullptr;
  require(::getifaddrs(&list) == 0, "cannot list the addresses of " + interface + ": " + errno_text());
  std::vector<uint32_t> addresses;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr != nullptr && entry->ifa_addr->sa_family == AF_INET && interface == entry->ifa_name) {
      addresses.push_back(reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr.s_addr);
    }
  }
  ::freeifaddrs(list);
  return addresses;
}

}  // namespace

struct DelayLine::Host {
  struct Held {
    uint32_t id;
    Clock::time_point release;
  };
  // The packets from one sender to this host, in the order they came.
  struct Flow {
    uint64_t random = 0;  // counter of a counter-based generator: 8 bytes, as there is a flow per pair of hosts
    std::deque<Held> held;
    Clock::time_point last_release;
    double uniform() { return static_cast<double>(splitmix64(++random) >> 11) * 0x1.0p-53; }  // [0, 1)
  };

  DelayLine* line = nullptr;
  size_t index = 0;
  Impairment impairment;
  std::vector<uint32_t> addresses;  // IPv4, network order
  nfq_handle* handle = nullptr;
  nfq_q_handle* queue = nullptr;
  int fd = -1;
  std::vector<Flow> flows;      // by sender index
  std::vector<uint32_t> ready;  // packets to accept at the next release_due()
  bool verdict_failed = false;
  std::atomic<uint64_t> packets{0}, dropped{0}, bytes{0};  // of what this host sends
  std::atomic<uint64_t> overruns{0};                       // of this host's queue

  ~Host() {
    if (queue != nullptr) nfq_destroy_queue(queue);
    if (handle != nullptr) nfq_close(handle);
  }

  // Within this host's link outage (Impairment::down_after_seconds, down_for_seconds)?
  bool is_down() const {
    if (impairment.down_for_seconds <= 0) return false;
    const double since_start = std::chrono::duration<double>(Clock::now() - line->started_at_).count();
    return since_start >= impairment.down_after_seconds &&
           since_start < impairment.down_after_seconds + impairment.down_for_seconds;
  }

  // The host of the delay line that sent a packet, from the IPv4 header at the start of the copy; null if none.
  Host* sender_of(nfq_data* data) const {
    unsigned char* packet = nullptr;
    const int copied = nfq_get_payload(data, &packet);
    if (copied < 20 || (packet[0] >> 4) != 4) return nullptr;
    uint32_t source;
    std::memcpy(&source, packet + 12, sizeof source);
    const auto found = line->host_of_address_.find(source);
    return found == line->host_of_address_.end() ? nullptr : line->hosts_[found->second].get();
  }

  // Called by nfq_handle_packet for each packet that arrived on this host's interface: let it pass, drop it, or
  // hold it until its release time.
  static int on_packet(nfq_q_handle* queue, nfgenmsg* message, nfq_data* data, void* context) {
    auto& receiver = *static_cast<Host*>(context);
    const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
    if (header == nullptr) return 0;
    const uint32_t id = ntohl(header->packet_id);
    Host* sender = receiver.sender_of(data);
    if (sender != nullptr) {
      sender->packets.fetch_add(1, std::memory_order_relaxed);
      sender->bytes.fetch_add(packet_length(message, data), std::memory_order_relaxed);
    }
    if (sender != nullptr && sender != &receiver && (sender->is_down() || receiver.is_down())) {
      sender->dropped.fetch_add(1, std::memory_order_relaxed);
      nfq_set_verdict(queue, id, NF_DROP, 0, nullptr);
      return 0;
    }
    if (sender == nullptr || sender == &receiver || !sender->impairment.any()) {
      receiver.ready.push_back(id);
      return 0;
    }
    const Impairment& impairment = sender->impairment;
    Flow& flow = receiver.flows[sender->index];
    if (impairment.loss > 0 && flow.uniform() < impairment.loss) {
      sender->dropped.fetch_add(1, std::memory_order_relaxed);
      nfq_set_verdict(queue, id, NF_DROP, 0, nullptr);
      return 0;
    }
    double seconds = impairment.delay_seconds;
    if (impairment.jitter_seconds > 0) seconds += (2 * flow.uniform() - 1) * impairment.jitter_seconds;
    const auto added =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
    // Never before the packet ahead: a link keeps order (jitter only bunches packets up).
    flow.last_release = std::max(Clock::now() + added, flow.last_release);
    flow.held.push_back({id, flow.last_release});
    return 0;
  }

  // Reads about `limit` queued-packet messages without blocking, many per system call; returns false once the
  // socket is empty.
  bool read_messages(int limit) {
    constexpr int kBatch = 64;
    constexpr size_t kSlot = 2048;  // a message (headers, attributes, 20 copied bytes) takes ~200
    alignas(nlmsghdr) static thread_local char buffers[kBatch][kSlot];
    mmsghdr messages[kBatch];
    iovec parts[kBatch];
    for (int done = 0; done < limit;) {
      for (int i = 0; i < kBatch; ++i) {
        parts[i] = {buffers[i], kSlot};
        messages[i] = {};
        messages[i].msg_hdr.msg_iov = &parts[i];
        messages[i].msg_hdr.msg_iovlen = 1;
      }
      const int n = ::recvmmsg(fd, messages, kBatch, MSG_DONTWAIT, nullptr);
      if (n > 0) {
        for (int i = 0; i < n; ++i) nfq_handle_packet(handle, buffers[i], static_cast<int>(messages[i].msg_len));
        if (n < kBatch) return false;
        done += n;
      } else if (n < 0 && errno == ENOBUFS) {
        // The socket overflowed: the kernel let those packets pass (fail-open). Count it and go on.
        if (overruns.fetch_add(1, std::memory_order_relaxed) == 0) {
          log::info("delay line: host " + std::to_string(index) + " lost packets to a full socket buffer");
        }
      } else if (!(n < 0 && errno == EINTR)) {
        return false;  // EAGAIN, or an error that the next poll reports again
      }
    }
    return true;
  }
};

DelayLine::DelayLine(uint64_t seed) : seed_(seed) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  require(wake_fd_ >= 0, "cannot create the delay line's eventfd: " + errno_text());
}

DelayLine::~DelayLine() {
  stop();
  hosts_.clear();  // closes the queues before the eventfd
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void DelayLine::add_host(const NetworkNamespace& ns, const std::string& interface, const Impairment& impairment) {
  require(!started_ && !stopped_, "DelayLine::add_host must come before start()");
  require(impairment.delay_seconds >= 0 && impairment.jitter_seconds >= 0, "delay and jitter must not be negative");
  require(impairment.loss >= 0 && impairment.loss <= 1, "loss must be a fraction between 0 and 1");
  require(hosts_.size() < 65536, "a delay line serves at most 65536 hosts");
  auto host = std::make_unique<Host>();
  host->line = this;
  host->index = hosts_.size();
  host->impairment = impairment;
  const auto queue_number = static_cast<uint16_t>(host->index);  // queue numbers are per namespace; unique is enough
  const std::string where = std::to_string(queue_number) + " for " + interface;

  ns.run_inside([&] {
    host->addresses = ipv4_addresses(interface);
    host->handle = nfq_open();
    require(host->handle != nullptr, "cannot open an nfqueue socket (" + errno_text() + ")");
    // Binding to a protocol family is a no-op since Linux 3.8 but harmless; older kernels need it.
    nfq_bind_pf(host->handle, AF_INET);
    host->queue = nfq_create_queue(host->handle, queue_number, &Host::on_packet, host.get());
    require(host->queue != nullptr, "cannot bind nfqueue " + where + " (" + errno_text() +
                                        (errno == EPERM ? ": is another program or delay line using it?)" : ")"));
    require(nfq_set_mode(host->queue, NFQNL_COPY_PACKET, kCopyRange) == 0,
            "cannot set the copy mode of nfqueue " + where + " (" + errno_text() + ")");
    require(nfq_set_queue_maxlen(host->queue, kQueueMaxlen) == 0,
            "cannot set the length of nfqueue " + where + " (" + errno_text() + ")");
    // GSO: hand us super-packets whole instead of segmenting them (and skip checksumming them). FAIL_OPEN: accept
    // rather than drop when the queue or the socket is full.
    const uint32_t flags = NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN;
    if (nfq_set_queue_flags(host->queue, flags, flags) != 0) {
      log::info("delay line: the kernel refused the GSO/fail-open flags of nfqueue " + where + " (" + errno_text() +
                "); going on without");
    }
    nfnl_rcvbufsiz(nfq_nfnlh(host->handle), kSocketBufferBytes);  // SO_RCVBUFFORCE, beyond net.core.rmem_max
    host->fd = nfq_fd(host->handle);
  });
  require(!host->addresses.empty(),
          interface + " of host " + std::to_string(host->index) + " has no IPv4 address yet; the delay line needs it");
  for (const uint32_t address : host->addresses) {
    require(host_of_address_.count(address) == 0, "two hosts of the delay line have the same IPv4 address");
  }

  const std::vector<std::string> rule = {
      "PREROUTING", "-i", interface, "-j", "NFQUEUE", "--queue-num", std::to_string(queue_number), "--queue-bypass"};
  auto iptables = [&](const std::string& action) {
    std::vector<std::string> argv = {"iptables", "-w", "-t", "raw", action};
    argv.insert(argv.end(), rule.begin(), rule.end());
    ns.run_command_inside(argv);
  };
  try {
    iptables("-C");  // already there (an earlier delay line on this namespace): do not queue twice
  } catch (const Error&) {
    try {
      iptables("-A");
    } catch (const Error& e) {
      throw Error("cannot send the packets arriving on " + interface + " to the delay line: " + e.what());
    }
  }
  for (const uint32_t address : host->addresses) host_of_address_[address] = host->index;
  hosts_.push_back(std::move(host));
  // A flow from every host to every host (the new one's own flow stays unused), each with its own generator.
  auto seed_flow = [&](Host& receiver, size_t sender) {
    receiver.flows.emplace_back();
    receiver.flows.back().random = splitmix64(seed_ ^ splitmix64(uint64_t{sender} << 32 | receiver.index));
  };
  Host& added = *hosts_.back();
  for (auto& receiver : hosts_) {
    if (receiver.get() != &added) seed_flow(*receiver, added.index);
  }
  for (size_t sender = 0; sender < hosts_.size(); ++sender) seed_flow(added, sender);
}

void DelayLine::start() {
  require(!started_ && !stopped_, "a delay line starts once");
  started_ = true;
  started_at_ = Clock::now();
  thread_ = std::thread([this] { serve(); });
}

void DelayLine::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    stopping_.store(true);
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof one) < 0) log::info("delay line: cannot wake its thread: " + errno_text());
    thread_.join();
  }
  hand_back_all();
}

void DelayLine::hand_back_all() {
  // Closing a queue drops what it holds, so first turn new packets away (a queue of length 0 fails open: they pass
  // undelayed), then read what is already queued and accept everything.
  for (auto& host : hosts_) {
    nfq_set_queue_maxlen(host->queue, 0);  // also dispatches the packet messages it reads on the way to the ack
    while (host->read_messages(kMessagesPerRound)) {
    }
    release_due(*host, /*everything=*/true);
  }
}

DelayLine::Counts DelayLine::counts(size_t host_index) const {
  require(host_index < hosts_.size(), "no host " + std::to_string(host_index) + " in the delay line");
  const Host& host = *hosts_[host_index];
  Counts counts;
  counts.packets = host.packets.load(std::memory_order_relaxed);
  counts.dropped = host.dropped.load(std::memory_order_relaxed);
  counts.bytes = host.bytes.load(std::memory_order_relaxed);
  counts.overruns = host.overruns.load(std::memory_order_relaxed);
  return counts;
}

double DelayLine::thread_cpu_seconds() const {
  clockid_t clock;
  timespec time{};
  if (started_ && !stopped_ && pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) == 0 &&
      clock_gettime(clock, &time) == 0) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_nsec) * 1e-9;
  }
  return static_cast<double>(final_cpu_ns_.load()) * 1e-9;
}

void DelayLine::release_due(Host& receiver, bool everything) {
  const Clock::time_point now = Clock::now();
  std::vector<uint32_t>& ids = receiver.ready;
  for (Host::Flow& flow : receiver.flows) {
    for (; !flow.held.empty() && (everything || flow.held.front().release <= now); flow.held.pop_front()) {
      ids.push_back(flow.held.front().id);
    }
  }
  if (ids.empty()) return;
  // A batch verdict accepts every packet of the queue numbered up to n. The packets numbered below the oldest one
  // still held have all been dropped or are released now, so one batch verdict covers those; the others (overtaking
  // a held packet of another sender) get one verdict each. Numbers wrap around, hence the serial comparison.
  auto before = [](uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; };
  bool holding = false;
  uint32_t oldest_held = 0;
  for (const Host::Flow& flow : receiver.flows) {
    if (!flow.held.empty() && (!holding || before(flow.held.front().id, oldest_held))) {
      oldest_held = flow.held.front().id;
      holding = true;
    }
  }
  bool batch = false;
  uint32_t top = 0;
  for (const uint32_t id : ids) {
    if (holding && !before(id, oldest_held)) {
      nfq_set_verdict(receiver.queue, id, NF_ACCEPT, 0, nullptr);
    } else if (!batch || before(top, id)) {
      top = id;
      batch = true;
    }
  }
  if (batch && nfq_set_verdict_batch(receiver.queue, top, NF_ACCEPT) < 0 && !receiver.verdict_failed) {
    receiver.verdict_failed = true;  // said once: held packets would wait for the queue's end, at stop()
    log::info("delay line: cannot release the packets of host " + std::to_string(receiver.index) + ": " + errno_text());
  }
  ids.clear();
}

void DelayLine::serve() {
  // Default timer slack is 50 us; sub-millisecond delays deserve better.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  std::vector<pollfd> fds(hosts_.size() + 1);
  fds[0] = {wake_fd_, POLLIN, 0};
  for (size_t i = 0; i < hosts_.size(); ++i) fds[i + 1] = {hosts_[i]->fd, POLLIN, 0};
  // Timers wake us late, in a virtual machine by 20..150 us (more for longer sleeps), which would add to every
  // delay. So the timer is aimed `lead` before the next release, `lead` learning the lateness; when that wakes us
  // early, a second, short sleep covers the rest.
  Clock::duration lead{0};
  try {
    while (!stopping_.load()) {
      Clock::time_point next = Clock::time_point::max();
      for (const auto& receiver : hosts_) {
        for (const Host::Flow& flow : receiver->flows) {
          if (!flow.held.empty()) next = std::min(next, flow.held.front().release);
        }
      }
      timespec timeout{};
      timespec* timeout_pointer = nullptr;  // nothing held: sleep until a packet comes
      bool led = false;
      if (next != Clock::time_point::max()) {
        const Clock::time_point now = Clock::now();
        led = next - lead > now;
        const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>((led ? next - lead : next) - now);
        if (wait.count() > 0) {
          timeout.tv_sec = static_cast<time_t>(wait.count() / 1000000000);
          timeout.tv_nsec = static_cast<long>(wait.count() % 1000000000);
        }
        timeout_pointer = &timeout;
      }
      const int ready = ::ppoll(fds.data(), fds.size(), timeout_pointer, nullptr);
      require(ready >= 0 || errno == EINTR, "the delay line's ppoll failed: " + errno_text());
      if (ready == 0 && led) {
        const Clock::duration late = Clock::now() - next;  // negative when the lead was too long
        lead = std::clamp(lead + late / 8, Clock::duration::zero(), kMaxLead);
      }
      if (ready > 0 && (fds[0].revents & POLLIN)) break;
      for (size_t i = 0; i < hosts_.size(); ++i) {
        if (ready > 0 && fds[i + 1].revents != 0) hosts_[i]->read_messages(kMessagesPerRound);
        release_due(*hosts_[i], /*everything=*/false);
      }
    }
  } catch (const std::exception& e) {
    // Let traffic go on undelayed rather than end the process.
    log::info(std::string("delay line stopped, traffic passes undelayed: ") + e.what());
    hand_back_all();
  }
  timespec time{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0) {
    final_cpu_ns_.store(time.tv_sec * 1000000000LL + time.tv_nsec);
  }
}

}  // namespace distsgd::cluster

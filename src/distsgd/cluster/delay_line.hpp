// Link delay, jitter and loss in user space. The kernel here has no netem qdisc, so packets go through an NFQUEUE:
// one thread holds them in order and gives them back to the kernel (NF_ACCEPT) when their time has come, or drops
// them (NF_DROP) when they are lost.
//
// Where: a host's impairment applies to what it sends to the other hosts of the delay line, but the packets are held
// where they arrive, in the receiving host (iptables raw PREROUTING on its interface), not on the way out of the
// sender. On the way out a packet is still charged to its TCP socket, and TCP's small-queue check (TSQ) lets a socket
// have only ~1 ms of its pacing rate below it: a 5 ms delay on OUTPUT cut one TCP flow to 0.009 Gbit/s, the same
// delay on arrival (after ip_rcv has orphaned the packet, as netem would) gives 1.9 Gbit/s. The receiver tells
// senders apart by IPv4 source address, so each host's interface must have its address before add_host().
//
// Also: IPv4 only (iptables, not ip6tables); ARP and loopback traffic are untouched. Like netem, the unit is the
// kernel's packet: a GSO super-packet (up to 64 KB of TCP) is delayed, counted and lost whole. Rules use
// --queue-bypass and the queues fail open, so with no delay line listening (after stop()) or when a queue or socket
// overflows, packets pass undelayed rather than being dropped.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distsgd/cluster/network_namespace.hpp"

namespace distsgd::cluster {

struct Impairment {           // of one host's outgoing traffic on its link
  double delay_seconds = 0;   // added to every packet the host sends to another host of the delay line
  double jitter_seconds = 0;  // uniform in [-jitter, +jitter] around the delay; packets stay in order (a packet is
                              // never released before the one ahead of it from the same sender, nor before it came)
  double loss = 0;            // fraction 0..1 of packets dropped, each independently
  // The link is down (every packet to or from the host dropped) from down_after_seconds after the delay line
  // started, for down_for_seconds (0: never down): a partition that TCP outlives if it is shorter than its timeouts.
  double down_after_seconds = 0;
  double down_for_seconds = 0;
  bool any() const { return delay_seconds > 0 || jitter_seconds > 0 || loss > 0 || down_for_seconds > 0; }
};

class DelayLine {
 public:
  // `seed` makes losses and jitter reproducible: the packets from host s to host r draw from a generator seeded by
  // (seed, s, r), so the k-th packet of that pair meets the same fate in every run.
  explicit DelayLine(uint64_t seed);
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;
  ~DelayLine();  // stop()s

  // Before start(): adds the host whose `interface` (already addressed) lives in namespace `ns`. Packets arriving on
  // that interface go through this delay line (an iptables rule `-t raw -A PREROUTING -i interface -j NFQUEUE
  // --queue-num <host index> --queue-bypass`, added unless present, and an nfqueue socket opened inside ns); those
  // from another host of the delay line get that host's impairment, others pass at once. Add every host that sends
  // or receives impaired traffic, unimpaired ones too. The rule stays in the namespace after stop().
  // Throws Error when iptables is missing, the interface has no IPv4 address or the queue cannot be bound.
  void add_host(const NetworkNamespace& ns, const std::string& interface, const Impairment& impairment);

  // One thread serves every host: ppoll() over the queues' sockets, with a nanosecond timeout for the next release.
  void start();
  // Releases (accepts) the packets still held, then ends the thread. Idempotent; the destructor calls it.
  void stop();

  struct Counts {           // of one host's traffic to the other hosts
    uint64_t packets = 0;   // packets that reached the delay line, dropped ones included
    uint64_t dropped = 0;   // packets lost on purpose
    uint64_t bytes = 0;     // bytes of `packets` (IP packet lengths; a GSO super-packet counts whole)
    uint64_t overruns = 0;  // times this host's queue could not hand us packets (socket full); they passed undelayed
  };
  Counts counts(size_t host_index) const;  // thread-safe

  // CPU time of the serving thread so far, kernel time included (a released packet's way on through the stack is
  // paid there). For measuring the delay line's cost; call from the thread that owns the delay line.
  double thread_cpu_seconds() const;

 private:
  struct Host;
  void serve();
  void release_due(Host& receiver, bool everything);
  void hand_back_all();  // stops queueing and accepts every packet held or still unread

  uint64_t seed_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::unordered_map<uint32_t, size_t> host_of_address_;  // IPv4 address (network order) -> host index
  int wake_fd_ = -1;                                      // eventfd: stop() wakes the thread
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> final_cpu_ns_{0};  // the serving thread's CPU time, stored as it ends
  bool started_ = false;
  std::chrono::steady_clock::time_point started_at_;  // the links' outages are timed from here
  bool stopped_ = false;
};

}  // namespace distsgd::cluster

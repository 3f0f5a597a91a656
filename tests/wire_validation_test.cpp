// Hostile and broken message headers (issue 14, item 4): the parameter-server and gossip decoders check every
// field before a buffer is touched, and refuse foreign messages, with an error naming the field, the value, the
// bound and the peer.
#include "distsgd/algo/decentralized/gossip_header.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/algo/ps/messages.hpp"
#include "distsgd/comm/gloo_communicator.hpp"
#include "distsgd/core/error.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

using namespace distsgd::algo;

namespace {

constexpr double kWireNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The error a decode throws, or "" when it accepts the header.
template <typename Decode>
std::string error_of_decode(Decode decode) {
  return distsgd::testing::error_of_call(decode);
}

std::vector<double> request_header(const ps::Request& r) {
  std::vector<double> h(ps::kRequestHeaderSize);
  ps::encode_request(r, h.data());
  return h;
}

const ps::RequestBounds kBounds{/*peer=*/3, /*shard=*/1, /*shard_numel=*/100, /*workers=*/4};

std::string request_error(std::vector<double> h) {
  return error_of_decode([&] { ps::decode_request(h.data(), kBounds); });
}

// The header of a valid request with field `index` replaced by `value`.
std::vector<double> request_with(int index, double value) {
  ps::Request r;
  r.kind = ps::RequestKind::kGradient;
  r.step = 7;
  r.lr = 0.1;
  r.offset = 10;
  r.numel = 20;
  auto h = request_header(r);
  h[index] = value;
  return h;
}

}  // namespace

TEST(WireValidation, PsRequestRoundTrips) {
  ps::Request r;
  r.kind = ps::RequestKind::kPushGradient;
  r.step = 12;
  r.lr = 0.05;
  r.clock = 11;
  r.version = 40;
  r.entries = 100;
  r.offset = 0;
  r.numel = -1;
  r.contributions = 4;
  const auto h = request_header(r);
  const ps::Request d = ps::decode_request(h.data(), kBounds);
  EXPECT_EQ(d.kind, r.kind);
  EXPECT_EQ(d.step, 12);
  EXPECT_DOUBLE_EQ(d.lr, 0.05);
  EXPECT_EQ(d.clock, 11);
  EXPECT_EQ(d.version, 40);
  EXPECT_EQ(d.entries, 100);
  EXPECT_EQ(d.numel, -1);
  EXPECT_EQ(d.contributions, 4);
  // A piece that ends exactly at the shard's end is inside it.
  EXPECT_EQ(request_error(request_with(8, 80)), "");
}

TEST(WireValidation, PsRequestRefusesForeignMessages) {
  EXPECT_EQ(request_error(request_with(0, 1234)),
            "foreign parameter-server request to shard 1 from rank 3: magic number 1234 is not distsgd's 0x64735053 (a "
            "process that is not a distsgd peer of this run, or a corrupt message)");
  EXPECT_EQ(request_error(request_with(0, kWireNaN)).rfind("foreign parameter-server request", 0), 0u);
  EXPECT_EQ(request_error(request_with(1, 2)),
            "parameter-server request to shard 1 from rank 3 speaks protocol version 2, this build speaks 1 (run the "
            "same distsgd build on every process)");
  // An all-zero header (a message of the right size from anything else) is foreign too.
  EXPECT_NE(request_error(std::vector<double>(ps::kRequestHeaderSize, 0.0)).find("foreign"), std::string::npos);
}

TEST(WireValidation, PsRequestNamesEachBadField) {
  struct Case {
    int index;
    double value;
    std::string expected;  // what the error says after "field "
  };
  const std::vector<Case> cases = {
      {2, 9, "'kind' is 9, expected an integer in [0, 6]"},
      {2, -1, "'kind' is -1, expected an integer in [0, 6]"},
      {2, 1.5, "'kind' is 1.5, expected an integer in [0, 6]"},
      {3, -1, "'step' is -1, expected an integer in [0, 9007199254740992]"},
      {3, kWireNaN, "'step' is nan, expected an integer in [0, 9007199254740992]"},
      {3, 1e300, "'step' is 1.0000000000000001e+300, expected an integer in [0, 9007199254740992]"},
      {4, kInf, "'lr' is inf, expected a number in [0, 1.7976931348623157e+308]"},
      {4, -0.5, "'lr' is -0.5, expected a number in [0, 1.7976931348623157e+308]"},
      {5, -2, "'clock' is -2, expected an integer in [-1, 9007199254740992]"},
      {6, -1, "'version' is -1, expected an integer in [0, 9007199254740992]"},
      {7, 101, "'entries' is 101, expected an integer in [-1, 100]"},
      {7, -5, "'entries' is -5, expected an integer in [-1, 100]"},
      {8, 101, "'offset' is 101, expected an integer in [0, 100]"},
      {8, -1, "'offset' is -1, expected an integer in [0, 100]"},
      {9, 91, "'numel' is 91, expected an integer in [-1, 90]"},  // offset 10: the piece would pass the end
      {9, -2, "'numel' is -2, expected an integer in [-1, 90]"},
      {10, 0, "'contributions' is 0, expected an integer in [1, 4]"},
      {10, 5, "'contributions' is 5, expected an integer in [1, 4]"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(request_error(request_with(c.index, c.value)),
              "malformed parameter-server request to shard 1 from rank 3: field " + c.expected +
                  " (a corrupt message, or a process that is not a distsgd peer of this run)")
        << "field " << c.index << " = " << c.value;
  }
  // A whole-shard payload (numel -1) must start at 0.
  auto h = request_with(9, -1);
  EXPECT_NE(request_error(h).find("field 'offset (of a whole-shard payload)' is 10, expected an integer in [0, 0]"),
            std::string::npos);
}

TEST(WireValidation, PsReplyNamesEachBadField) {
  ps::Reply reply;
  reply.version = 5;
  reply.alpha = 0.5;
  reply.slowest = 3;
  std::vector<double> good(ps::kReplyHeaderSize);
  ps::encode_reply(reply, good.data());
  const ps::Reply d = ps::decode_reply(good.data(), 6);
  EXPECT_EQ(d.version, 5);
  EXPECT_DOUBLE_EQ(d.alpha, 0.5);
  EXPECT_EQ(d.slowest, 3);
  const std::vector<std::pair<int, double>> bad = {{2, 0}, {2, 3}, {3, -1}, {4, 1.5}, {4, kWireNaN}, {5, -7}};
  const std::vector<std::string> expected = {
      "'kind' is 0, expected an integer in [1, 2]",
      "'kind' is 3, expected an integer in [1, 2]",
      "'version' is -1, expected an integer in [0, 9007199254740992]",
      "'alpha' is 1.5, expected a number in [0, 1]",
      "'alpha' is nan, expected a number in [0, 1]",
      "'slowest' is -7, expected an integer in [-1, 9007199254740992]",
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    auto h = good;
    h[bad[i].first] = bad[i].second;
    EXPECT_EQ(error_of_decode([&] { ps::decode_reply(h.data(), 6); }),
              "malformed parameter-server reply from rank 6: field " + expected[i] +
                  " (a corrupt message, or a process that is not a distsgd peer of this run)");
  }
  auto foreign = good;
  foreign[0] = 0;
  EXPECT_NE(
      error_of_decode([&] { ps::decode_reply(foreign.data(), 6); }).find("foreign parameter-server reply from rank 6"),
      std::string::npos);
}

TEST(WireValidation, GossipHeaderNamesEachBadField) {
  using decentralized::GossipHeader;
  std::vector<double> good(decentralized::kGossipHeaderSize);
  decentralized::encode_gossip_header({decentralized::MessageKind::kPush, 9, 0.125}, good.data());
  const GossipHeader d = decentralized::decode_gossip_header(good.data(), 2);
  EXPECT_EQ(d.kind, decentralized::MessageKind::kPush);
  EXPECT_EQ(d.step, 9);
  EXPECT_DOUBLE_EQ(d.weight, 0.125);
  const std::vector<std::pair<int, double>> bad = {{2, 5}, {2, kInf}, {3, -3}, {4, -0.25}, {4, 2}, {4, kWireNaN}};
  const std::vector<std::string> expected = {
      "'kind' is 5, expected an integer in [0, 4]",
      "'kind' is inf, expected an integer in [0, 4]",
      "'step' is -3, expected an integer in [0, 9007199254740992]",
      "'weight' is -0.25, expected a number in [0, 1]",
      "'weight' is 2, expected a number in [0, 1]",
      "'weight' is nan, expected a number in [0, 1]",
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    auto h = good;
    h[bad[i].first] = bad[i].second;
    EXPECT_EQ(error_of_decode([&] { decentralized::decode_gossip_header(h.data(), 2); }),
              "malformed gossip message from rank 2: field " + expected[i] +
                  " (a corrupt message, or a process that is not a distsgd peer of this run)");
  }
  auto old_version = good;
  old_version[1] = 0;
  EXPECT_EQ(error_of_decode([&] { decentralized::decode_gossip_header(old_version.data(), 2); }),
            "gossip message from rank 2 speaks protocol version 0, this build speaks 1 (run the same distsgd build on "
            "every process)");
}

// End to end: a rank that sends a foreign header to a worker's gossip endpoint ends that worker's receiving thread
// with the decoder's error (check() throws it), and nothing is written anywhere.
TEST(WireValidation, GossipEndpointRefusesAForeignPeer) {
  const int port = distsgd::testing::free_tcp_port();
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        distsgd::comm::ProcessEnv env;
        env.rank = r;
        env.world_size = 2;
        env.port = port;
        distsgd::comm::GlooCommunicator comm(env, 2, std::chrono::milliseconds(20000));
        if (r == 0) {
          decentralized::EndpointOptions options;
          options.numel = 10;
          options.listeners = {1};
          decentralized::GossipHandlers handlers;
          handlers.on_push = [](decentralized::PushMessage) { ADD_FAILURE() << "a foreign push was merged"; };
          decentralized::GossipEndpoint endpoint(comm, options, handlers);
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (std::chrono::steady_clock::now() < deadline) {
            endpoint.check();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        } else {
          // A header-sized message with a push's kind where the magic number belongs (protocol.cpp's header tag).
          constexpr int64_t kGossipHeaderTag = 301;
          auto garbage = torch::tensor({1.0, 0.0, 0.5, 0.0, 0.0}, torch::kDouble);
          comm.send(garbage, 0, kGossipHeaderTag).wait();
        }
        comm.barrier_workers();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0],
            "gossip: serving rank 1: foreign gossip message from rank 1: magic number 1 is not distsgd's 0x64734753 (a "
            "process that is not a distsgd peer of this run, or a corrupt message)");
  // Rank 1's own barrier then fails (rank 0 left), which is not what this test is about.
}

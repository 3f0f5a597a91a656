// The algorithm seam: a new algorithm with a flag of its own is one file (this one stands in for it) plus its
// registration, and nothing in core/, train/ or cli/ changes: its flag joins the option list (so the command line,
// --help and config.json), its rule is checked, other algorithms refuse it, and the training loop runs it.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/trainer.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace {

using distsgd::testing::read_file;
using distsgd::testing::TempDir;

// The new algorithm's own flag, declared where the algorithm lives.
const distsgd::StoredOption<double> kShrink{"--shrink", 1.0, "shrunk-sgd: factor on every step",
                                            distsgd::within<double>(0, 1)};

// Plain SGD whose every step is scaled by --shrink (0: the parameters never move).
class ShrunkSgd final : public distsgd::algo::WorkerAlgorithm {
 public:
  explicit ShrunkSgd(const distsgd::algo::WorkerSetup& s) : flat_(s.flat), shrink_(kShrink.of(s.config)) {}
  void after_backward(int64_t, double lr) override {
    torch::NoGradGuard no_grad;
    flat_.params().add_(flat_.grads(), -lr * shrink_);
  }
  distsgd::algo::AlgorithmStats stats() const override { return {}; }

 private:
  distsgd::optim::FlatParameters& flat_;
  double shrink_;
};

void register_shrunk_sgd() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  distsgd::algo::AlgorithmInfo info;
  info.name = "shrunk-sgd";
  info.description = "SGD with every step scaled by --shrink (a test of the seam)";
  info.single_process = true;
  info.options = {&kShrink.spec()};
  info.make_worker = [](const distsgd::algo::WorkerSetup& s) { return std::make_unique<ShrunkSgd>(s); };
  distsgd::algo::register_algorithm(info);
}

distsgd::TrainConfig small_run(const std::string& out, const std::string& shrink, int64_t steps) {
  distsgd::TrainConfig c;
  c.model = "mlp";
  c.mlp_width = 16;
  c.dataset = "synthetic";
  c.synthetic_train_size = 256;
  c.synthetic_test_size = 64;
  c.batch_size = 16;
  c.threads = 1;
  c.max_steps = steps;
  c.checkpoint_each_epoch = false;
  c.progress_seconds = 1000;
  c.out = out;
  distsgd::train::set_option(c, "--algo", {"shrunk-sgd"});
  distsgd::train::set_option(c, "--shrink", {shrink});
  return c;
}

std::string error_of_config(const distsgd::TrainConfig& c) {
  return distsgd::testing::error_of_call([&] { distsgd::train::validate(c); });
}

}  // namespace

TEST(AlgorithmSeam, ANewAlgorithmWithItsOwnFlagNeedsNoChangeOutsideItsFile) {
  register_shrunk_sgd();
  const auto& options = distsgd::train::train_options();
  const auto shrink = std::find_if(options.begin(), options.end(), [](const auto& o) { return o.flag == "--shrink"; });
  ASSERT_NE(shrink, options.end()) << "the flag joins the options of distsgd train";
  EXPECT_EQ(shrink->group, "Options of shrunk-sgd");
  EXPECT_EQ(shrink->default_text(), "1.0");

  TempDir dir;
  // Its rule is checked, and an algorithm that does not take it refuses it.
  EXPECT_NE(error_of_config(small_run(dir / "a", "2", 1)).find("--shrink must be in [0.0, 1.0] (got 2.0)"),
            std::string::npos)
      << error_of_config(small_run(dir / "a", "2", 1));
  auto other = small_run(dir / "a", "0.5", 1);
  other.algorithm = "sgd";
  EXPECT_NE(error_of_config(other).find("--shrink applies to shrunk-sgd only (not sgd)"), std::string::npos)
      << error_of_config(other);
  EXPECT_THROW(distsgd::train::set_option(other, "--shrink", {"half"}), distsgd::Error);

  // The training loop runs it, and the flag reaches it: with --shrink 0 the parameters never move, so the test
  // loss after 5 steps is the initial model's; with --shrink 1 it is not.
  const auto one_step = distsgd::train::run_training(small_run(dir / "frozen1", "0", 1));
  const auto five_steps = distsgd::train::run_training(small_run(dir / "frozen5", "0", 5));
  const auto moving = distsgd::train::run_training(small_run(dir / "moving", "1", 5));
  EXPECT_EQ(one_step["algorithm"], "shrunk-sgd");
  EXPECT_DOUBLE_EQ(one_step["test_loss"].get<double>(), five_steps["test_loss"].get<double>());
  EXPECT_NE(moving["test_loss"].get<double>(), five_steps["test_loss"].get<double>());

  // config.json records it under its key.
  const auto config = nlohmann::json::parse(read_file(dir / "frozen5/config.json"));
  EXPECT_EQ(config["shrink"], 0.0);
  EXPECT_EQ(config["algorithm"], "shrunk-sgd");
  EXPECT_THROW(distsgd::algo::register_algorithm(distsgd::algo::find_algorithm("shrunk-sgd")), distsgd::Error);
}

// Every option of distsgd train is declared once: flags and config.json keys are unique.
TEST(Options, EveryFlagAndKeyIsDeclaredOnce) {
  std::set<std::string> flags, keys;
  for (const auto& o : distsgd::train::train_options()) {
    EXPECT_TRUE(flags.insert(o.flag).second) << o.flag;
    EXPECT_TRUE(keys.insert(o.key).second) << o.key;
    EXPECT_TRUE(o.parse && o.value) << o.flag;
  }
  for (const char* flag : {"--overlap", "--staleness", "--pi", "--gossip-mode", "--compress", "--sharding"}) {
    EXPECT_EQ(flags.count(flag), 1u) << flag;
  }
}

// Enum values are parsed once, where they enter, and the error lists the valid ones.
TEST(Options, EnumValuesAreCheckedWhenParsed) {
  distsgd::TrainConfig c;
  try {
    distsgd::train::set_option(c, "--overlap", {"sometimes"});
    FAIL() << "expected an error";
  } catch (const distsgd::Error& e) {
    EXPECT_STREQ(e.what(), "--overlap must be none, wfbp or multistep (got 'sometimes')");
  }
  distsgd::train::set_option(c, "--overlap", {"multistep"});
  EXPECT_EQ(distsgd::train::config_json(c)["overlap"], "multistep");
  EXPECT_EQ(distsgd::TrainConfig{}.algorithm_settings.size(), 0u);
}

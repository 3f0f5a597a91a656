// The language-model workload: gpt-mini (models/gpt_mini.cpp), byte-level text (data/text.hpp), its metrics (test
// loss and bits per byte), --optimizer adamw in training, and bad input.
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/text.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/trainer.hpp"
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using distsgd::testing::error_of_call;
using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

namespace {

bool has_corpus() { return std::filesystem::exists(distsgd::data::kDefaultTextCorpus); }

std::unique_ptr<distsgd::models::Model> small_gpt(int64_t context) {
  distsgd::models::ModelOptions options;
  options.name = "gpt-mini";
  options.gpt_layers = 2;
  options.gpt_heads = 4;
  options.gpt_dim = 32;
  return distsgd::models::make_model(options, {1, 1, context, 256, true});
}

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

// Entropy in bits of the bytes' frequencies: what a model that knows only them achieves.
double unigram_entropy_bits(const std::vector<uint8_t>& bytes) {
  std::array<double, 256> counts{};
  for (uint8_t b : bytes) counts[b] += 1;
  double bits = 0;
  for (double c : counts) {
    if (c > 0) bits -= c / static_cast<double>(bytes.size()) * std::log2(c / static_cast<double>(bytes.size()));
  }
  return bits;
}

// A short gpt-mini run on the default corpus (flags shared by the tests below).
const std::string kShortTextRun =
    " --model gpt-mini --dataset text --context 32 --gpt-layers 1 --gpt-heads 4 --gpt-dim 48 --batch-size 16"
    " --optimizer adamw --lr 0.003 --weight-decay 0.01 --seed 3 --threads 1 --eval-batch-size 512"
    " --progress-seconds 1000 --no-checkpoint";

}  // namespace

// Logits are [B, T, 256], and position t depends on bytes 0..t only: changing byte t changes no logit before it.
TEST(GptMini, ShapesAndCausality) {
  torch::manual_seed(1);
  const int64_t context = 16;
  auto model = small_gpt(context);
  model->set_training(false);
  torch::NoGradGuard no_grad;
  auto bytes = torch::randint(0, 256, {3, context}, torch::kLong);
  const auto logits = model->forward(bytes);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{3, context, 256}));
  EXPECT_EQ(model->forward(bytes.narrow(1, 0, 5)).sizes(), (std::vector<int64_t>{3, 5, 256})) << "shorter sequences";
  for (int64_t t : {int64_t{0}, int64_t{7}, context - 1}) {
    auto changed = bytes.clone();
    changed.select(1, t).add_(1).remainder_(256);
    const auto other = model->forward(changed);
    EXPECT_TRUE(torch::equal(other.narrow(1, 0, t), logits.narrow(1, 0, t))) << "a position before " << t << " moved";
    EXPECT_FALSE(torch::allclose(other.select(1, t), logits.select(1, t))) << "position " << t << " ignored its byte";
  }
  // [B, 1, 1, T] of any dtype (the operation counter's batch of zeros) is the same input.
  EXPECT_TRUE(torch::equal(model->forward(bytes.view({3, 1, 1, context}).to(torch::kFloat)), logits));
  const auto error = error_of_call([&] { model->forward(torch::zeros({1, context + 1}, torch::kLong)); });
  EXPECT_EQ(error, "gpt-mini: a sequence of 17 bytes is longer than its context 16");
}

// The split is by position: the first 90% of the bytes train, the last 10% test; each split is cut into
// consecutive sequences of C bytes, whose target is the same window one byte later.
TEST(TextData, SplitByPositionAndTargetsOneByteAhead) {
  std::vector<uint8_t> corpus(1000);
  for (size_t i = 0; i < corpus.size(); ++i) corpus[i] = static_cast<uint8_t>(i * 7 % 251);
  const auto d = distsgd::data::make_text_dataset(corpus, 8, "test corpus");
  EXPECT_TRUE(d.text);
  EXPECT_EQ(d.classes, 256);
  EXPECT_EQ(d.width, 8);
  EXPECT_EQ(d.train.size(), (900 - 1) / 8);  // bytes [0, 900): the last target byte inside
  EXPECT_EQ(d.test.size(), (100 - 1) / 8);   // bytes [900, 1000)
  for (const auto* split : {&d.train, &d.test}) {
    const size_t begin = split == &d.train ? 0 : 900;
    for (int64_t i = 0; i < split->size(); ++i) {
      for (int64_t t = 0; t < 8; ++t) {
        const size_t at = begin + static_cast<size_t>(i * 8 + t);
        ASSERT_EQ(split->images[i][0][0][t].item<int64_t>(), corpus[at]);
        ASSERT_EQ(split->labels[i][t].item<int64_t>(), corpus[at + 1]);
      }
    }
  }
  // A batch becomes the model's input: int64 bytes [B, C].
  const auto input = distsgd::data::normalize(d.train.images.narrow(0, 0, 4), d);
  EXPECT_EQ(input.scalar_type(), torch::kLong);
  EXPECT_EQ(input.sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(input[1][0].item<int64_t>(), corpus[8]);

  const auto short_corpus =
      error_of_call([&] { distsgd::data::make_text_dataset(std::vector<uint8_t>(200), 64, "tiny.txt"); });
  EXPECT_EQ(short_corpus,
            "the text corpus tiny.txt has 200 bytes: too short for sequences of 64 bytes in both splits (its last 10% "
            "tests); give at least 651 bytes, or a smaller --context");
}

// Fortune files separate their entries by lines holding only '%': the corpus keeps the entries' text alone.
TEST(TextData, FortuneSeparatorsAreStripped) {
  EXPECT_EQ(distsgd::data::strip_fortune_separators(bytes_of("one\n%\ntwo\n  %\n100%\n%\nthree\n%")),
            bytes_of("one\ntwo\n  %\n100%\nthree\n"));
  if (!has_corpus()) GTEST_SKIP() << "Debian's fortunes package is not installed (scripts/setup.sh)";
  const auto corpus = distsgd::data::read_text_corpus(distsgd::data::kDefaultTextCorpus);
  EXPECT_GT(corpus.size(), 2'000'000u);
  EXPECT_EQ(std::string(corpus.begin(), corpus.end()).find("\n%\n"), std::string::npos);
}

// gpt-mini learns the corpus: a few hundred AdamW steps of one process take the test bits per byte clearly below the
// unigram entropy of the bytes (the best a model without context can do), and the run reports them.
TEST(LanguageModel, GptMiniLearnsTheCorpusBelowItsUnigramEntropy) {
  if (!has_corpus()) GTEST_SKIP() << "Debian's fortunes package is not installed (scripts/setup.sh)";
  const auto corpus = distsgd::data::read_text_corpus(distsgd::data::kDefaultTextCorpus);
  const double unigram = unigram_entropy_bits(corpus);
  TempDir dir;
  auto r = run_distsgd("train --algo sgd --max-steps 300" + kShortTextRun + " --out " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = summary_of(dir / "run");
  const double bits = summary["test_bits_per_byte"].get<double>();
  EXPECT_NEAR(bits, summary["test_loss"].get<double>() / std::log(2.0), 1e-9);
  EXPECT_LT(bits, unigram - 0.5) << "unigram entropy " << unigram << "; " << summary.dump(2);
  EXPECT_FALSE(summary.contains("test_accuracy")) << "a language model reports bits per byte, not accuracy";
  const std::string metrics = read_file(dir / "run/metrics.jsonl");
  const auto first_record = nlohmann::json::parse(metrics.substr(0, metrics.find('\n')));
  EXPECT_TRUE(first_record.contains("test_bits_per_byte")) << metrics;
  EXPECT_FALSE(first_record.contains("test_accuracy")) << metrics;
  std::cerr << "gpt-mini, 300 steps: test bits per byte " << bits << " (unigram entropy " << unigram << ")\n";
}

// A run stopped at a checkpoint and resumed continues AdamW exactly: the moments and step counts are in the
// checkpoint (the losses of the next steps are the uninterrupted run's, bit for bit).
TEST(LanguageModel, AdamWCheckpointResumesExactly) {
  TempDir dir;
  {
    std::ofstream corpus(dir / "corpus.txt");
    for (int i = 0; i < 400; ++i) corpus << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
  }
  const auto config = [&](const std::string& out) {
    distsgd::TrainConfig c;
    c.algorithm = "sgd";
    c.model = "gpt-mini";
    c.dataset = "text";
    c.data_file = dir / "corpus.txt";
    c.context = 16;
    c.gpt_layers = 1;
    c.gpt_heads = 2;
    c.gpt_dim = 16;
    c.batch_size = 8;
    c.optimizer = distsgd::Optimizer::kAdamW;
    c.lr = 0.01;
    c.weight_decay = 0.01;
    c.threads = 1;
    c.seed = 4;
    c.out = out;
    c.progress_seconds = 1e9;
    return c;
  };
  const auto losses_of = [](const distsgd::TrainConfig& c) {
    std::vector<std::pair<int64_t, double>> losses;
    distsgd::train::TrainHooks hooks;
    hooks.on_step = [&](const distsgd::train::StepRecord& r) { losses.emplace_back(r.global_step, r.loss); };
    distsgd::train::run_training(c, hooks);
    return losses;
  };
  auto reference = config(dir / "reference");
  reference.max_steps = 10;
  const auto all = losses_of(reference);
  ASSERT_EQ(all.size(), 10u);
  auto first = config(dir / "interrupted");
  first.max_steps = 4;
  first.checkpoint_every_steps = 4;
  first.checkpoint_each_epoch = false;
  losses_of(first);
  auto resumed = config("");
  resumed.resume = dir / "interrupted";
  resumed.max_steps = 10;
  const auto after = losses_of(resumed);
  ASSERT_EQ(after.size(), 6u);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].first, all[4 + i].first);
    EXPECT_EQ(after[i].second, all[4 + i].second) << "step " << after[i].first;
  }
}

// Two AR-SGD workers step AdamW on the averaged gradient: the run completes, both replicas stay identical (no
// parameter variance), and --target-loss stops it at the first evaluation that reaches the loss. On the first
// 400 KB of the corpus, so that its frequent evaluations are short.
TEST(LanguageModel, TwoWorkerAllreduceWithAdamWTrainsAndStopsAtATargetLoss) {
  if (!has_corpus()) GTEST_SKIP() << "Debian's fortunes package is not installed (scripts/setup.sh)";
  TempDir dir;
  const auto corpus = distsgd::data::read_text_corpus(distsgd::data::kDefaultTextCorpus);
  {
    std::ofstream part(dir / "part.txt", std::ios::binary);
    part.write(reinterpret_cast<const char*>(corpus.data()), 400'000);
  }
  auto r = run_distsgd("train --algo arsgd --workers 2 --max-steps 200 --evals-per-epoch 35 --target-loss 2.7" +
                       kShortTextRun + " --data-file " + (dir / "part.txt") + " --out " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = summary_of(dir / "run");
  EXPECT_EQ(summary["parameter_variance"].get<double>(), 0.0);
  EXPECT_EQ(summary["stop_reason"], "target_loss") << summary.dump(2);
  EXPECT_LE(summary["test_loss"].get<double>(), 2.7);
  EXPECT_LT(summary["steps"].get<int64_t>(), 200);
  EXPECT_TRUE(summary["time_to_target_seconds"].is_number()) << summary.dump(2);
}

// AR-SGD multistep steps each worker's 1/n of every bucket with AdamW (a slice keeps its own step count) and
// allgathers the slices: the same parameters, bit for bit, as one allreduce and a whole-buffer step (2 workers: the
// sums are the same either way).
TEST(LanguageModel, AllreduceMultistepStepsAdamWBySlicesLikeTheWholeBuffer) {
  if (!has_corpus()) GTEST_SKIP() << "Debian's fortunes package is not installed (scripts/setup.sh)";
  TempDir dir;
  const auto corpus = distsgd::data::read_text_corpus(distsgd::data::kDefaultTextCorpus);
  {
    std::ofstream part(dir / "part.txt", std::ios::binary);
    part.write(reinterpret_cast<const char*>(corpus.data()), 100'000);
  }
  for (const std::string overlap : {"none", "multistep"}) {
    // Buckets of 16 KB: several, so that each worker steps several slices.
    auto r = run_distsgd("train --algo arsgd --workers 2 --max-steps 12 --overlap " + overlap +
                         " --bucket-mb 0.016 --first-bucket-mb 0.016" + kShortTextRun + " --data-file " +
                         (dir / "part.txt") + " --out " + (dir / overlap));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto none = distsgd::testing::parameters_of(dir / "none");
  const auto multistep = distsgd::testing::parameters_of(dir / "multistep");
  EXPECT_TRUE(torch::equal(none, multistep));
}

// Bad input gets one clear line: an unknown optimizer, AdamW where a parameter server owns the update, a missing
// corpus, gpt-mini on images and an image model on text.
TEST(LanguageModel, BadInputIsRefusedInOneLine) {
  const auto error_of_flags = [](const std::vector<std::pair<std::string, std::string>>& flags) {
    return error_of_call([&] {
      distsgd::TrainConfig c;
      for (const auto& [flag, value] : flags) distsgd::train::set_option(c, flag, {value});
      distsgd::train::validate(c);
    });
  };
  EXPECT_EQ(error_of_flags({{"--optimizer", "adam"}}), "--optimizer must be sgd or adamw (got 'adam')");
  for (const std::string algorithm : {"asp", "bsp", "ssp", "easgd", "aladdin"}) {
    const auto error =
        error_of_flags({{"--algo", algorithm}, {"--workers", "2"}, {"--servers", "1"}, {"--optimizer", "adamw"}});
    EXPECT_EQ(error.rfind("--optimizer adamw: " + algorithm + "'s parameter server", 0), 0u) << error;
  }
  EXPECT_EQ(error_of_flags({{"--optimizer", "adamw"}, {"--algo", "sgd"}}), "");
  EXPECT_EQ(error_of_flags({{"--optimizer", "adamw"}, {"--algo", "arsgd"}, {"--workers", "2"}}), "");
  for (const std::string algorithm : {"gosgd", "gossip", "adpsgd", "sgp"}) {
    EXPECT_EQ(error_of_flags({{"--optimizer", "adamw"}, {"--algo", algorithm}, {"--workers", "2"}}), "") << algorithm;
  }
  EXPECT_EQ(error_of_flags({{"--optimizer", "adamw"}, {"--algo", "arsgd"}, {"--workers", "2"}, {"--compress", "dgc"}}),
            "--compress dgc accumulates momentum SGD's velocity on the worker (momentum correction): --optimizer adamw "
            "does not combine with it");
  EXPECT_NE(error_of_flags({{"--adam-beta1", "1"}, {"--optimizer", "adamw"}}), "");
  EXPECT_EQ(error_of_flags({{"--dataset", "text"}, {"--target-accuracy", "0.5"}}),
            "--target-accuracy: a language model (--dataset text) reports bits per byte, not accuracy; give "
            "--target-loss (nats: bits per byte x ln 2)");
  EXPECT_EQ(error_of_flags({{"--adam-beta2", "0.99"}}),
            "--adam-beta2 is AdamW's: give --optimizer adamw, or leave it out");
  EXPECT_EQ(error_of_flags({{"--momentum", "0.5"}, {"--optimizer", "adamw"}}),
            "--momentum is momentum SGD's: AdamW's is --adam-beta1 (leave --momentum out with --optimizer adamw)");

  TempDir dir;
  auto missing = run_distsgd("train --algo sgd --model gpt-mini --dataset text --data-file " + (dir / "nowhere.txt") +
                             " --max-steps 1 --out " + (dir / "run"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("distsgd: error: missing text corpus " + (dir / "nowhere.txt") +
                                " (give --data-file a text file)"),
            std::string::npos)
      << missing.output;
  EXPECT_EQ(distsgd::testing::count_of(missing.output, "error"), 1) << missing.output;

  const auto gpt_on_images = error_of_call([] {
    distsgd::models::ModelOptions options;
    options.name = "gpt-mini";
    distsgd::models::make_model(options, {1, 28, 28, 10});
  });
  EXPECT_EQ(gpt_on_images, "gpt-mini is a language model over bytes: train it with --dataset text");
  const auto lenet_on_text = error_of_call([] {
    distsgd::models::ModelOptions options;
    options.name = "lenet5";
    distsgd::models::make_model(options, {1, 1, 64, 256, true});
  });
  EXPECT_EQ(lenet_on_text, "--dataset text holds byte sequences: train a language model on it (--model gpt-mini)");
}

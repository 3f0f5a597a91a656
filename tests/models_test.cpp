// Model zoo: shapes, parameter counts against the reference implementations, determinism, errors, TorchScript.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "distsgd/core/error.hpp"
#include "distsgd/models/model.hpp"
#include "test_util.hpp"

namespace dm = distsgd::models;
using distsgd::testing::error_of_call;

namespace {

dm::InputSpec mnist() { return {1, 28, 28, 10}; }
dm::InputSpec cifar() { return {3, 32, 32, 10}; }
dm::InputSpec imagenet() { return {3, 224, 224, 1000}; }

std::unique_ptr<dm::Model> build(const std::string& name, const dm::InputSpec& input, bool batch_norm = true) {
  dm::ModelOptions options;
  options.name = name;
  options.batch_norm = batch_norm;
  return dm::make_model(options, input);
}

// The message of the distsgd::Error thrown by f, or "" when none is thrown.
// A small input for each registry name that keeps the forward pass fast.
dm::InputSpec small_input_for(const std::string& name) {
  if (name == "gpt-mini") return {1, 1, 16, 256, true};  // sequences of 16 bytes
  if (name == "mlp" || name == "lenet5" || name.rfind("resnet1", 0) == 0 || name == "resnet50") return mnist();
  return cifar();
}

}  // namespace

TEST(Models, EveryRegistryModelOutputsLogitsPerSample) {
  for (const auto& name : dm::model_names()) {
    SCOPED_TRACE(name);
    const auto input = small_input_for(name);
    torch::manual_seed(0);
    auto model = build(name, input);
    if (input.sequence) {  // a language model: logits for every position
      const auto output = model->forward(torch::randint(0, 256, {4, input.width}, torch::kLong));
      EXPECT_EQ(output.sizes(), (std::vector<int64_t>{4, input.width, input.classes}));
      continue;
    }
    const auto output = model->forward(torch::randn({4, input.channels, input.height, input.width}));
    EXPECT_EQ(output.sizes(), (std::vector<int64_t>{4, input.classes}));
    EXPECT_EQ(model->name(), name);
  }
}

TEST(Models, SmallModelsAcceptBothMnistAndCifarShapes) {
  for (const auto& name : {"mlp", "lenet5", "resnet20", "resnet18", "vgg11"}) {
    for (const auto& input : {mnist(), cifar()}) {
      SCOPED_TRACE(std::string(name) + " on " + std::to_string(input.channels) + "x" + std::to_string(input.height));
      auto model = build(name, input);
      EXPECT_EQ(model->forward(torch::randn({4, input.channels, input.height, input.width})).sizes(),
                (std::vector<int64_t>{4, 10}));
    }
  }
}

TEST(Models, ParameterCountsMatchReferenceImplementations) {
  EXPECT_EQ(dm::count_parameters(*build("mlp", mnist())), 5'824'522);  // 784-2048-2048-10
  EXPECT_EQ(dm::count_parameters(*build("lenet5", mnist())), 61'706);
  // He et al. 2016 CIFAR ResNets with option A shortcuts (checked against a PyTorch definition).
  EXPECT_EQ(dm::count_parameters(*build("resnet20", cifar())), 269'722);
  EXPECT_EQ(dm::count_parameters(*build("resnet32", cifar())), 464'154);
  EXPECT_EQ(dm::count_parameters(*build("resnet56", cifar())), 853'018);
  // torchvision's counts at 3x224x224, 1000 classes.
  EXPECT_EQ(dm::count_parameters(*build("resnet18", imagenet())), 11'689'512);
  EXPECT_EQ(dm::count_parameters(*build("resnet50", imagenet())), 25'557'032);
  EXPECT_EQ(dm::count_parameters(*build("resnet101", imagenet())), 44'549'160);
  EXPECT_EQ(dm::count_parameters(*build("resnet152", imagenet())), 60'192'808);
}

TEST(Models, VggParameterCountsMatchTorchvision) {
  const int64_t vgg16 = 138'357'544;
  EXPECT_EQ(dm::count_parameters(*build("vgg16", imagenet(), /*batch_norm=*/false)), vgg16);
  // BatchNorm adds a weight and a bias per channel of its 13 layers: 2 * (2*64 + 2*128 + 3*256 + 6*512) = 8,448.
  EXPECT_EQ(dm::count_parameters(*build("vgg16", imagenet(), /*batch_norm=*/true)), vgg16 + 8'448);
  EXPECT_EQ(dm::count_parameters(*build("vgg11", imagenet(), /*batch_norm=*/false)), 132'863'336);
}

TEST(Models, CifarVggHeadIsOneLinearLayer) {
  // 32 -> 1 after five pools: 512 features straight to the classes.
  auto model = build("vgg11", cifar(), /*batch_norm=*/false);
  const auto names = model->parameter_names();
  const auto parameters = model->parameters();
  ASSERT_EQ(names.back(), "classifier.0.bias");
  EXPECT_EQ(parameters[parameters.size() - 2].sizes(), (std::vector<int64_t>{10, 512}));
  // Counts of the same CIFAR head written in PyTorch.
  EXPECT_EQ(dm::count_parameters(*build("vgg11", cifar())), 9'231'114);
  EXPECT_EQ(dm::count_parameters(*build("vgg16", cifar())), 14'728'266);
}

TEST(Models, ParameterNamesAreUniqueAndMatchParameters) {
  for (const auto& name : dm::model_names()) {
    SCOPED_TRACE(name);
    auto model = build(name, small_input_for(name));
    const auto names = model->parameter_names();
    const auto parameters = model->parameters();
    EXPECT_EQ(names.size(), parameters.size());
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    for (const auto& parameter : parameters) EXPECT_TRUE(parameter.requires_grad());
  }
}

TEST(Models, TorchvisionParameterNamesForResNet18) {
  const auto names = build("resnet18", mnist())->parameter_names();
  EXPECT_EQ(names.front(), "conv1.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "layer2.0.downsample.0.weight"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "layer4.1.bn2.bias"), names.end());
  EXPECT_EQ(names.back(), "fc.bias");
}

TEST(Models, SameSeedGivesSameWeights) {
  for (const auto& name : {"mlp", "lenet5", "resnet20", "resnet18", "vgg11"}) {
    SCOPED_TRACE(name);
    const auto input = small_input_for(name);
    torch::manual_seed(7);
    auto first = build(name, input);
    torch::manual_seed(7);
    auto second = build(name, input);
    const auto a = first->parameters(), b = second->parameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << first->parameter_names()[i];
    torch::manual_seed(8);
    auto third = build(name, input);
    EXPECT_FALSE(torch::equal(a.front(), third->parameters().front()));
  }
}

TEST(Models, UnknownNameListsValidNames) {
  const auto message = error_of_call([] { build("resnet99", cifar()); });
  EXPECT_NE(message.find("unknown model 'resnet99'"), std::string::npos) << message;
  for (const auto& name : dm::model_names()) EXPECT_NE(message.find(name), std::string::npos) << name;
  EXPECT_NE(message.find("TorchScript .pt file"), std::string::npos) << message;
}

TEST(Models, ImpossibleInputsAreUserErrors) {
  EXPECT_THROW(build("lenet5", {1, 8, 8, 10}), distsgd::Error);
  EXPECT_THROW(build("mlp", {1, 28, 28, 0}), distsgd::Error);
  EXPECT_THROW(build("resnet20", {0, 32, 32, 10}), distsgd::Error);
}

TEST(Models, BuffersOnlyWhereThereIsBatchNorm) {
  for (const auto& name : {"resnet20", "resnet18", "vgg11"}) {
    EXPECT_FALSE(build(name, small_input_for(name))->buffers().empty()) << name;
  }
  EXPECT_TRUE(build("mlp", mnist())->buffers().empty());
  EXPECT_TRUE(build("lenet5", mnist())->buffers().empty());
  EXPECT_TRUE(build("vgg11", cifar(), /*batch_norm=*/false)->buffers().empty());
}

TEST(Models, SetTrainingSwitchesBatchNormBetweenBatchAndRunningStatistics) {
  torch::manual_seed(1);
  auto model = build("resnet20", cifar());
  const auto input = torch::randn({4, 3, 32, 32});
  const auto running_mean = model->buffers().front().clone();  // bn1.running_mean

  model->set_training(false);
  const auto eval_first = model->forward(input);
  const auto eval_second = model->forward(input);
  EXPECT_TRUE(torch::equal(eval_first, eval_second));
  EXPECT_TRUE(torch::equal(model->buffers().front(), running_mean));  // eval leaves the statistics alone

  model->set_training(true);
  const auto train_output = model->forward(input);
  EXPECT_FALSE(torch::allclose(train_output, eval_first));
  EXPECT_FALSE(torch::equal(model->buffers().front(), running_mean));  // training updates them
}

TEST(Models, GradientsReachEveryParameter) {
  auto model = build("resnet20", cifar());
  const auto loss =
      torch::nn::functional::cross_entropy(model->forward(torch::randn({4, 3, 32, 32})), torch::tensor({0, 1, 2, 3}));
  loss.backward();
  for (const auto& parameter : model->parameters()) EXPECT_TRUE(parameter.grad().defined());
}

// ---- TorchScript files ----

namespace {

// Python with torch, needed to write a TorchScript file; the tests skip without it.
const char* const kPython = "/usr/bin/python3";

bool python_has_torch() {  // asked once: importing torch takes a second
  static const bool available = [] {
    const std::string command = std::string(kPython) + " -c 'import torch' > /dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  }();
  return available;
}

// Runs a Python script and returns its standard output. The script goes through a file, not `python3 -c`:
// torch.jit.script reads the source of the classes it compiles.
std::string run_python(const std::filesystem::path& directory, const std::string& script, const std::string& argument) {
  const auto script_path = directory / "script.py";
  { std::ofstream(script_path) << script; }
  const std::string command = std::string(kPython) + " '" + script_path.string() + "' '" + argument + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  std::string output;
  char chunk[256];
  while (fgets(chunk, sizeof chunk, pipe)) output += chunk;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  return output;
}

// A tiny conv net with BatchNorm and one frozen tensor; prints its trainable parameter count.
const char* const kTinyNetScript = R"(
import sys, torch
class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.frozen = torch.nn.Parameter(torch.ones(3), requires_grad=False)
        self.fc = torch.nn.Linear(4, 10)
    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))
torch.manual_seed(0)
net = Tiny()
torch.jit.script(net).save(sys.argv[1])
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
)";

class TorchScriptModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!python_has_torch()) GTEST_SKIP() << kPython << " cannot import torch";
    directory_ = std::filesystem::temp_directory_path() / ("distsgd_models_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!directory_.empty()) std::filesystem::remove_all(directory_, ignored);
  }
  std::filesystem::path directory_;
};

}  // namespace

TEST_F(TorchScriptModels, LoadsTrainsAndCountsLikePython) {
  const auto path = (directory_ / "tiny.pt").string();
  const int64_t python_count = std::stoll(run_python(directory_, kTinyNetScript, path));
  EXPECT_EQ(python_count, 4 * 9 + 4 + 4 + 4 + 4 * 10 + 10);

  auto model = build(path, mnist());
  EXPECT_EQ(model->name(), path);
  EXPECT_EQ(dm::count_parameters(*model), python_count);
  EXPECT_EQ(model->parameter_names(),
            (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"}));
  EXPECT_FALSE(model->buffers().empty());
  EXPECT_FALSE(model->supports_forward_gate());  // AR-SGD multistep then waits for all parameters before forward

  const auto output = model->forward(torch::randn({4, 1, 28, 28}));
  ASSERT_EQ(output.sizes(), (std::vector<int64_t>{4, 10}));
  torch::nn::functional::cross_entropy(output, torch::tensor({0, 1, 2, 3})).backward();
  for (const auto& parameter : model->parameters()) EXPECT_TRUE(parameter.grad().defined());
}

TEST_F(TorchScriptModels, WrongNumberOfClassesIsReported) {
  const auto path = (directory_ / "tiny.pt").string();
  run_python(directory_, kTinyNetScript, path);
  const auto message = error_of_call([&] { build(path, {1, 28, 28, 5}); });
  EXPECT_NE(message.find("model file " + path + " outputs shape [2, 10] but dataset has 5 classes"), std::string::npos)
      << message;
}

TEST(TorchScriptFiles, MissingFileIsNamed) {
  const std::string path = "/nonexistent/distsgd/net.pt";
  const auto message = error_of_call([&] { build(path, mnist()); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

TEST(TorchScriptFiles, UnreadableFileIsNamed) {
  const auto path =
      std::filesystem::temp_directory_path() / ("distsgd_not_a_model_" + std::to_string(::getpid()) + ".pt");
  { std::ofstream(path) << "not a TorchScript archive"; }
  const auto message = error_of_call([&] { build(path.string(), mnist()); });
  std::filesystem::remove(path);
  EXPECT_NE(message.find("cannot read model file " + path.string()), std::string::npos) << message;
}

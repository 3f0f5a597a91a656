// The checkpoint directory of a run (every algorithm, one process or many):
//   OUT/checkpoints/<id>/worker-<r>.pt, server-<s>.pt   one file per process, each written to a temporary name,
//                                                       fsync'd and renamed
//   OUT/checkpoints/<id>/manifest.json                  written last, by worker 0, once every file is in: the run's
//                                                       identity and each file's size and checksum
//   OUT/checkpoints/latest                              the id of the newest complete checkpoint, replaced atomically
// The id is the global step the checkpoint was taken after. A checkpoint without a manifest is incomplete and never
// resumed from; a file whose size or checksum differs from the manifest's is refused, as is a checkpoint of
// another configuration (algorithm, workers, servers, model, dataset, batch size).
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/train/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::train {

// What one process writes: its position (workers), BatchNorm buffers and RNG state (workers), and its algorithm's
// state (a worker's parameters as "parameters", its momentum, ...; a server's shard).
struct RankFile {
  int64_t id = 0;
  TrainingPosition position;
  std::vector<at::Tensor> buffers;
  at::Tensor rng_state;
  algo::AlgorithmState state;
};

std::string checkpoints_root(const std::string& run_dir);
std::string checkpoint_dir(const std::string& run_dir, int64_t id);
// "worker-3.pt", "server-0.pt" (rank in the launcher's numbering: workers first, then servers).
std::string rank_file_name(const TrainConfig& config, int64_t rank);

void write_rank_file(const std::string& path, const RankFile& file);  // atomically, fsync'd
RankFile read_rank_file(const std::string& path);                     // throws Error naming the file
// The same from a file's contents (`path` names it in errors): every entry checked for its type and range, so a
// damaged or hostile file is one Error, never a crash (fuzz targets call this).
RankFile rank_file_from_bytes(const std::string& bytes, const std::string& path);

// Worker 0, once every process has written its file: writes the manifest (sizes and checksums of the files), points
// `latest` at it, and removes older checkpoints.
void complete_checkpoint(const TrainConfig& config, int64_t id, const TrainingPosition& position, int64_t parameters);

// The newest complete checkpoint of --resume's run, checked: its manifest matches this run's configuration (and
// `parameters`, when >= 0) and every file has the size and checksum the manifest gives. Returns its directory;
// throws Error with one line saying what is wrong.
std::string checked_checkpoint(const TrainConfig& config, int64_t parameters = -1);

}  // namespace distsgd::train

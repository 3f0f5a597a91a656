// One read-only copy of a dataset per host (issue 26): the processes of a run on one host map the same cache file of
// the decoded tensors instead of each holding its own copy. The first process to ask decodes the dataset and writes
// the file (under a lock, renamed into place whole); every process maps it read-only, so its pages are the page
// cache's, held once on the host however many processes read them. A file is named by the dataset's options and its
// source files' sizes and times, so a changed dataset gets a new file; the least recently used files beyond a few GB
// are removed when a new one is written. Remove a file to have it made again, never truncate it: a process mapping a
// truncated file dies (SIGBUS) when it reads past the new end.
#pragma once
#include "distsgd/data/dataset.hpp"

#include <string>

namespace distsgd::data {

// Where the cache files go: $DISTSGD_DATA_CACHE, else $XDG_CACHE_HOME/distsgd/datasets, else
// $HOME/.cache/distsgd/datasets; "" (no cache: each process loads its own copy) when DISTSGD_DATA_CACHE is "off" or
// no home is known.
std::string dataset_cache_dir();

// Whether cache files can be written in `dir` (created if missing); false, with one warning line saying so and that
// each process loads its own copy, when they cannot.
bool dataset_cache_usable(const std::string& dir);

// `options`' dataset with its splits mapped from the cache file in `cache_dir` (written first if missing). The
// tensors are read-only memory: writing to them kills the process. Throws Error as load_dataset does. When the cache
// cannot be written (a read-only or full directory), says so in one warning line and loads a private copy.
Dataset load_shared_dataset(const DatasetOptions& options, const std::string& cache_dir);

// Only the dataset's description (name, shape, classes, normalization), without samples: a parameter server's. With
// a cache directory it reads the cache file's header (writing the file first if missing); without, it loads the
// dataset and lets the samples go.
Dataset dataset_description(const DatasetOptions& options, const std::string& cache_dir);

// Bytes of the dataset's samples and labels, both splits, as held in memory.
double dataset_bytes(const Dataset& dataset);

}  // namespace distsgd::data

# distsgd: `make demo` and `make test` install what is missing, build, and run.
BUILD ?= build
BUILD_TYPE ?= Release
DEMO_OUT ?= runs/demo

.PHONY: setup configure build demo test bench format format-check sanitize sanitize-address fuzz soak clean

setup:
	@scripts/setup.sh

# clang++ where setup installed it (it compiles this code with about 45% less CPU than g++: bench/README, "Test
# time, session 25"),
# else the system's c++; CXX=g++ make build picks another for a new build tree.
configure: setup
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_CXX_COMPILER=$${CXX:-$$(command -v clang++ || echo c++)}

build: configure
	cmake --build $(BUILD)

# The demo study (distsgd study --preset demo), then its report: every algorithm's accuracy at four workers (lenet5
# on Fashion-MNIST, 2 epochs), throughput against 1, 2 and 4 workers on an emulated 100 Mbit/s network beside the
# simulator's prediction, and a straggler. Prints the table and the path of $(DEMO_OUT)/report.html. Resumable:
# after Ctrl-C, make demo again runs only what is left.
demo: build
	$(BUILD)/distsgd study --preset demo --out $(DEMO_OUT)
	$(BUILD)/distsgd report $(DEMO_OUT)

# One suite per core, each in one process: the suites CMakeLists.txt lists as parallel (the in-process ones, and the
# multi-process ones whose assertions hold on a busy host) run side by side; the tests that time something, compare
# slowed and unslowed workers or build network namespaces run alone (RUN_SERIAL).
# A fresh build tree has no CTest timings, so CTest would start the longest tests late and finish about 2.5 minutes
# later (bench/README, "Test time"): it starts from the timings in tests/ctest_costs.txt (refreshed with
# scripts/refresh_test_costs.sh), which later runs update in the build tree.
TEST_JOBS ?= $(shell nproc)
TEST_COSTS = $(BUILD)/Testing/Temporary/CTestCostData.txt
test: build
	@test -f $(TEST_COSTS) || { mkdir -p $(dir $(TEST_COSTS)) && cp tests/ctest_costs.txt $(TEST_COSTS); }
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j $(TEST_JOBS)

bench: build
	bench/throughput.sh
	bench/arsgd_vs_ddp.sh
	bench/commbench.sh
	bench/decentralized.sh

# The code's one style (.clang-format: Google, 120 columns). format-check is also a CTest test (Format.*).
SOURCES = $(shell git ls-files 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'examples/*.cpp')
format:
	@clang-format -i $(SOURCES)
format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format: every source follows .clang-format"

# The threaded code under the sanitizers: the parameter-server substrate (ASP, SSP, BSP, EASGD, ALADDIN runs), the
# gossip protocol and workers, AD-PSGD, the loader's prefetch thread. Each builds into its own directory.
SANITIZED_TESTS = GossipProtocol|ShardedLoader|Asp\.|Ssp\.|AsyncAlgorithms\.EachRuns|Aladdin|Easgd|DecentralizedConservation|DecentralizedTermination|Equivalence\.Bsp|Launcher\.
sanitize: setup
	@test -f build-tsan/build.ninja || cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDISTSGD_SANITIZE=thread -DDISTSGD_CTEST_PER_SUITE=OFF
	cmake --build build-tsan
	cd build-tsan && TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
	  OMP_NUM_THREADS=1 ctest --output-on-failure --timeout 1800 -R '$(SANITIZED_TESTS)'
sanitize-address: setup
	@test -f build-asan/build.ninja || cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDISTSGD_SANITIZE=address,undefined -DDISTSGD_CTEST_PER_SUITE=OFF
	cmake --build build-asan
	cd build-asan && ASAN_OPTIONS="detect_leaks=0" UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" \
	  ctest --output-on-failure --timeout 1800 -R '$(SANITIZED_TESTS)'

# The parsers and message decoders under libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer (fuzz/):
# built with clang into build-fuzz/, each target explored FUZZ_SECONDS with random mutations of its seeds, past
# findings and earlier runs' corpus; fails on any crash or report. (make test runs the fixed, deterministic
# fuzz/run.sh --fixed instead.)
FUZZ_SECONDS ?= 20
fuzz: setup
	fuzz/run.sh $(FUZZ_SECONDS)

# Long asynchronous runs under random message delays (scripts/soak.sh): memory growth, deadlock, lost messages.
# SOAK_MINUTES in all (default 20); not part of make test.
SOAK_MINUTES ?= 20
soak: build
	SOAK_MINUTES=$(SOAK_MINUTES) scripts/soak.sh

clean:
	rm -rf $(BUILD) build-tsan build-asan build-fuzz

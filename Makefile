# distsgd: `make demo` and `make test` install what is missing, build, and run.
BUILD ?= build
BUILD_TYPE ?= Release
DEMO_OUT ?= runs/demo

.PHONY: setup configure build demo test bench clean

setup:
	@scripts/setup.sh

configure: setup
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD)

# Every algorithm, four workers on this host, lenet5 on Fashion-MNIST, 2 epochs (global batch 128, decay for the
# last quarter): one table of algorithm, test accuracy, samples/s and wall time.
demo: build
	BUILD=$(BUILD) OUT=$(DEMO_OUT) scripts/compare.sh

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	bench/throughput.sh
	bench/arsgd_vs_ddp.sh
	bench/commbench.sh
	bench/decentralized.sh

clean:
	rm -rf $(BUILD)

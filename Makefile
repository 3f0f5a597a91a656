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

# Four AR-SGD workers on this host, lenet5 on Fashion-MNIST, 2 epochs (global batch 128, decay for the last half).
demo: build
	$(BUILD)/distsgd train --algo arsgd --workers 4 --model lenet5 --dataset fashion-mnist --epochs 2 \
		--batch-size 32 --lr 0.05 --lr-decay-epochs 1.5 --seed 1 --out $(DEMO_OUT) --overwrite

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	bench/throughput.sh

clean:
	rm -rf $(BUILD)

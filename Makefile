# The two commands a newcomer needs: `make demo` and `make test`. Both install what is
# missing (scripts/install-deps.sh), build, and run. CMake and ctest do the work underneath.
BUILD      ?= build
ASAN_BUILD ?= build-asan
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all build deps demo test test-fast test-asan install clean bench

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

demo: deps build
	scripts/demo.sh $(BUILD)

# The main test suite, then the same suite under AddressSanitizer + UBSan.
test: deps build
	scripts/run-tests.sh $(BUILD) $(CTEST_ARGS)
	$(MAKE) test-asan

test-fast: build
	scripts/run-tests.sh $(BUILD) $(CTEST_ARGS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCOLLIE_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	scripts/run-tests.sh $(ASAN_BUILD) -LE noasan $(CTEST_ARGS)

# collie against Open MPI, MPICH and Gloo on this host (bench/README.md); 14 to 20 minutes,
# BENCH_QUICK=1 for a 3-minute subset. Writes bench/results/latest.md and PNGs.
bench: deps build
	BENCH_QUICK=$(BENCH_QUICK) /usr/bin/python3 bench/compare/run.py --build $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

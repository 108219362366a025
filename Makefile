# Weft's quick start: `make demo` and `make test` set up what they need
# (Debian packages, a Ninja build in build/) and then run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit

.PHONY: setup configure build demo test check-lit check-unit check-format check-layers format fuzz clean

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

check-lit: build
	/usr/lib/llvm-22/bin/lit -sv $(BUILD)/test

check-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# clang-format (LLVM style, .clang-format) over every tracked C++ file.
check-format: setup
	git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

format: setup
	git ls-files --cached --others --exclude-standard '*.cpp' '*.h' | xargs clang-format -i

# The runtime executes sched instructions and never names a weft op (no
# quoted "weft.<op>" anywhere in runtime/) or includes MLIR or LLVM.
check-layers:
	@! grep -rn '"weft\.' runtime/ || { echo "runtime/ names weft ops"; exit 1; }
	@! grep -rn '#include "\(mlir\|llvm\)/' runtime/ || { echo "runtime/ includes MLIR or LLVM"; exit 1; }
	@echo "check-layers: runtime/ names no weft op and includes no MLIR"

# Formatting and layers, then lit, then ctest, whose summary line closes the run.
test: build check-format check-layers
	@bash scripts/setup-torch.sh $(BUILD)
	/usr/lib/llvm-22/bin/lit -sv $(BUILD)/test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The libFuzzer targets (test/fuzz), one after another, FUZZ_SECONDS each, on
# a corpus in the build tree plus the checked-in seeds (read only). An input
# that crashes, hangs (-timeout=5) or trips a sanitizer is saved as
# $(BUILD)/test/fuzz/findings/<fuzzer>-crash-...; the target fails after
# running them all if any found one.
FUZZ_SECONDS ?= 120
FUZZERS = safetensors sched-bundle sched-manifest ir config topology plan \
  tokens run-flags checkpoint dataset

fuzz: configure
	cmake --build $(BUILD) -j $(JOBS) --target $(addprefix weft-fuzz-,$(FUZZERS))
	@mkdir -p $(BUILD)/test/fuzz/findings
	@failed=; for f in $(FUZZERS); do \
	  log=$(BUILD)/test/fuzz/fuzz-$$f.log; \
	  case $$f in ir) dict=-dict=test/fuzz/ir.dict;; \
	    config|topology|checkpoint|dataset) dict=-dict=test/fuzz/json.dict;; \
	    *) dict=;; esac; \
	  if $(BUILD)/test/fuzz/weft-fuzz-$$f -max_total_time=$(FUZZ_SECONDS) \
	      -timeout=5 -print_final_stats=1 $$dict \
	      -artifact_prefix=$(BUILD)/test/fuzz/findings/$$f- \
	      $(BUILD)/test/fuzz/corpus/$$f test/fuzz/corpus/$$f > $$log 2>&1; then \
	    echo "weft-fuzz-$$f: $$(grep -o 'number_of_executed_units: [0-9]*' $$log | cut -d' ' -f2) runs in $(FUZZ_SECONDS) s, nothing found"; \
	  else \
	    tail -n 30 $$log; echo "weft-fuzz-$$f: FOUND A PROBLEM (log $$log)"; \
	    failed="$$failed $$f"; \
	  fi; \
	done; \
	test -z "$$failed" || { echo "fuzz: findings in$$failed"; exit 1; }

clean:
	rm -rf $(BUILD)

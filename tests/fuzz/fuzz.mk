# Builds the libFuzzer targets with clang, out of tree (the main build uses
# g++ and automake; this stays separate so neither has to know the other).
# scripts/fuzz.sh runs it:
#   make -f tests/fuzz/fuzz.mk -C BUILD_DIR SRCDIR=/path/to/repo
# Core objects are built once with coverage + ASan + UBSan and linked into
# every target, and into gen_inputs (without libFuzzer: it has a main).
SRCDIR ?= $(CURDIR)
CXX := $(shell command -v clang++-14 || command -v clang++)
JANSSON_CFLAGS := $(shell pkg-config --cflags jansson)
JANSSON_LIBS := $(shell pkg-config --libs jansson)
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# -ffile-prefix-map: no path of the checkout in the binaries (__FILE__ in
# invariant messages), so a fixed-seed run explores the same inputs in any
# checkout.
CXXFLAGS := -std=c++17 -g -O1 -Wall -Wextra -ffile-prefix-map=$(SRCDIR)/= $(JANSSON_CFLAGS) -I$(SRCDIR)/src/common -MMD -MP
TARGETS := fuzz_config fuzz_state fuzz_engine

# Everything of the core but the C ABI (capi*.cpp): the targets call C++.
CORE_SRC := $(filter-out $(wildcard $(SRCDIR)/src/common/capi*.cpp),$(wildcard $(SRCDIR)/src/common/*.cpp))
CORE_OBJ := $(patsubst $(SRCDIR)/src/common/%.cpp,core/%.o,$(CORE_SRC))

all: $(TARGETS) gen_inputs

core/%.o: $(SRCDIR)/src/common/%.cpp
	@mkdir -p core
	$(CXX) $(CXXFLAGS) $(SAN) -fsanitize=fuzzer-no-link -c $< -o $@

fuzz_%.o: $(SRCDIR)/tests/fuzz/fuzz_%.cpp
	$(CXX) $(CXXFLAGS) $(SAN) -fsanitize=fuzzer-no-link -c $< -o $@

fuzz_%: fuzz_%.o $(CORE_OBJ)
	$(CXX) $(SAN) -fsanitize=fuzzer $(filter %.o,$^) $(JANSSON_LIBS) -o $@

gen_inputs.o: $(SRCDIR)/tests/fuzz/gen_inputs.cpp
	$(CXX) $(CXXFLAGS) $(SAN) -c $< -o $@

gen_inputs: gen_inputs.o $(CORE_OBJ)
	$(CXX) $(SAN) $(filter %.o,$^) $(JANSSON_LIBS) -o $@

.PHONY: all
.SECONDARY:
-include $(wildcard core/*.d *.d)

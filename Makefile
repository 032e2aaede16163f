# glimmer: C11 library + CLI; the CUDA backend is built too when nvcc is found.
#   make            library, CLI and test programs
#   make test       everything, then the test suite (CPU; GPU tests skip without a GPU)
#   make demo       the README's main job: a tiny random Muse Glimmer model, generated and run
#   make test-cuda  the GPU tests (on a machine with an NVIDIA GPU)
#   make CUDA=0     force a CPU-only build
# Dependencies (Debian): libjansson-dev, libpcre2-dev, libmicrohttpd-dev (the server; without it
# `glimmer serve` says how to get it); scripts/install-deps.sh installs them.
# DEPS_PREFIX=/dir points the build at unpacked -dev packages (used on the GPU machine).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O3
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter $(OPT) -g -pthread \
           -Iinclude -Isrc
LDLIBS  += -ljansson -lpcre2-8 -lm -pthread

ifdef DEPS_PREFIX
CFLAGS  += -I$(DEPS_PREFIX)/usr/include -I$(DEPS_PREFIX)/usr/include/x86_64-linux-gnu
LDFLAGS += -L$(DEPS_PREFIX)/usr/lib/x86_64-linux-gnu -Wl,-rpath,$(DEPS_PREFIX)/usr/lib/x86_64-linux-gnu
endif

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(CUDA),0)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

# the HTTP server (server/, `glimmer serve`) where libmicrohttpd's header is found
HAVE_MHD := $(shell printf '\043include <microhttpd.h>\n' | $(CC) $(CFLAGS) -E -x c - >/dev/null 2>&1 && echo 1)
LIB_SRC  := $(wildcard src/*.c src/cpu/*.c)
CLI_SRC  := $(wildcard cli/*.c) $(if $(HAVE_MHD),$(wildcard server/*.c),)
TEST_SRC := $(wildcard tests/test_*.c)
CU_SRC   := $(if $(NVCC),$(wildcard src/cuda/*.cu),)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
CU_OBJ   := $(CU_SRC:%.cu=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)

ifneq ($(HAVE_MHD),)
CFLAGS  += -DGLIM_HAVE_SERVER -Iserver
SERVER_LIBS := -lmicrohttpd   # the glimmer binary only: the library does not need it
endif

ifneq ($(CU_SRC),)
CFLAGS    += -DGLIM_HAVE_CUDA
NVCC_ARCH ?= -gencode=arch=compute_90,code=sm_90
NVCCFLAGS ?= -O3 -std=c++17 $(NVCC_ARCH) -lineinfo \
             -Xcompiler -fPIC -Iinclude -Isrc -DGLIM_HAVE_CUDA
LDLIBS    += -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -ldl -lrt -lstdc++
endif

.PHONY: all test demo test-cuda clean deps bench link-flags
all: $(BUILD)/glimmer $(TEST_BIN) $(BUILD)/examples/generate

# what a program of your own links after build/libglimmer.a (examples/generate.c shows one)
link-flags:
	@echo $(LDFLAGS) $(LDLIBS)

$(BUILD)/examples/%: examples/%.c $(BUILD)/libglimmer.a
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -O2 -Iinclude $(LDFLAGS) -o $@ $< $(BUILD)/libglimmer.a $(LDLIBS)

deps:
	@scripts/install-deps.sh

$(BUILD)/libglimmer.a: $(LIB_OBJ) $(CU_OBJ)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BUILD)/glimmer: $(CLI_OBJ) $(BUILD)/libglimmer.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libglimmer.a $(LDLIBS) $(SERVER_LIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_SUPPORT_OBJ) $(BUILD)/libglimmer.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests -Itests/support $(LDFLAGS) -o $@ $< $(TEST_SUPPORT_OBJ) $(BUILD)/libglimmer.a $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests -Itests/support -MMD -MP -c -o $@ $<

# the prefill GEMM's wgmma exists only in the architecture-specific target (H100, H200)
$(BUILD)/src/cuda/prefill_gemm.o: NVCC_ARCH := -gencode=arch=compute_90a,code=sm_90a

$(BUILD)/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -MD -MF $(@:.o=.d) -c -o $@ $<

test: deps
	@$(MAKE) --no-print-directory all
	@tests/run.sh $(BUILD)

test-cuda: all
	@GLIM_REQUIRE_CUDA=1 tests/run.sh $(BUILD) cuda

demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/glimmer
	@$(BUILD)/glimmer demo

bench: $(BUILD)/bench/cpu_bench $(BUILD)/glimmer
	@bench/cpu_bench.sh $(BUILD)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libglimmer.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libglimmer.a $(LDLIBS)

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CU_OBJ:.o=.d)

# vkinrd - one flat, -j safe makefile.
#
#   make            build/vkinrd and build/vkinrctl (shaders compiled by
#                   glslang and embedded in the binary)
#   make deps       install the Debian packages the build and tests need
#   make check      the unit and integration tests, on the normal build and
#                   on the sanitizer build (ASan + UBSan), 3 at a time;
#                   ends with "N passed, N failed, N skipped"
#   make check-slow the tests make check leaves out (a line "# run.sh:
#                   slow" in the script), on both builds: 66_slurm_array
#                   (a Slurm cluster), 67_quality (300-epoch fits of a
#                   photo), 89_soak and 93_render_flood (they time
#                   training, each alone), 90_fuzz (the fuzz targets'
#                   own clang build; make fuzz-check), 47_dashboard_browser
#                   (a headless Chromium); and on the sanitizer
#                   build test_fit, test_gemm_coop, test_optim and
#                   test_ref (make check runs them on the normal build)
#   make check-all  make check and make check-slow in one run (nightly)
#   make demo       fit the sample image and show the result
#   make bench      the benchmark (tests/bench.sh; docs/BENCHMARKS.md)
#   make bench-quality  training recipes compared on real photographs
#   make bench-gemm every GEMM family timed and checked (tests/tools/bench_gemm.c)
#   make gpu-tools  build glslang 15 and spirv-val 2025.1 from Debian 13's
#                   sources into .tools/ (tests/gpu-tools.sh); the build
#                   then also compiles and checks the
#                   VK_NV_cooperative_matrix2 GEMMs (shaders/variants_cm2.txt),
#                   which Debian 12's glslang cannot. Without them the
#                   build is unchanged.
#   make bench-cpu  the CPU device against PyTorch on the same cores (tests/bench_cpu.sh)
#   make bench-dataset  a dataset of small images, packed, against the peer
#   make install PREFIX=/usr/local DESTDIR=
#
# B is the build folder; `make B=build-asan SAN=1` is the sanitizer build;
# `make B=build-bench BENCH_SHADERS=1` a vkinrd that also embeds the
# benchmarks' shaders (shaders/variants_bench.txt: VKINR_GEMM=coop_8 ...).

B ?= build
SAN ?=
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
GLSLANG ?= glslangValidator
SPIRV_VAL ?= spirv-val
# glslang 15 or newer for shaders/variants_cm2.txt: the one `make gpu-tools`
# builds, when it is there (empty: those variants are left out). Debian
# 12's spirv-val cannot read their SPIR-V; SPIRV_VAL15 is the newer one
# `make gpu-tools` builds too (empty: they are compiled unchecked).
GLSLANG15 ?= $(wildcard .tools/glslang15/bin/glslangValidator)
SPIRV_VAL15 ?= $(wildcard .tools/spirv-tools/bin/spirv-val)

PKGS := libuv libcjson libpng libjpeg libwebp libwebpdemux libexif vulkan
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# vkinrctl needs only these (PNG through zlib, no libpng, no Vulkan;
# libmicrohttpd for `vkinrctl dashboard`; cairo paints `vkinrctl plot`'s
# PNGs, and fontconfig's caches are let go after it; libxxhash makes
# the jobs' keys for --skip-done)
CLIENT_PKGS := libcjson zlib libmicrohttpd cairo fontconfig libxxhash
CLIENT_PKG_CFLAGS := $(shell pkg-config --cflags $(CLIENT_PKGS) 2>/dev/null)
CLIENT_PKG_LIBS := $(shell pkg-config --libs $(CLIENT_PKGS) 2>/dev/null)

# Includes name their folder from the top ("proto/errors.h",
# "util/fileio.h"); the daemon's own headers are found through -Idaemon,
# by their wing ("loop/server.h", "jobs/queue.h", "nn/fit.h"), and the
# client's through -Iclient ("core/client.h", "views/watch.h").
# The shared code sees the top folder only, the client the top folder and
# its own (INC below).
INC = -I. -Idaemon -I$(SHB)/shaders $(PKG_CFLAGS)
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	  -pthread -MMD -MP
LDLIBS += $(PKG_LIBS) -lm -pthread
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	  -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

# What both programs share: the protocol (proto/) and the utilities
# (util/), built into their own library; vkinrctl links that alone.
# Every .c below these folders and the daemon's is part of the library
# that vkinrd, the unit tests and the tools link; the mains are kept apart.
SHARED_SRC := $(wildcard proto/*.c util/*.c)
DAEMON_SRC := $(wildcard daemon/*.c daemon/*/*.c)
LIB_SRC := $(SHARED_SRC) $(filter-out daemon/main.c,$(DAEMON_SRC))
CLIENT_SRC := $(wildcard client/*.c client/*/*.c)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(B)/%.o)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_SUPPORT_SRC := $(wildcard tests/ref/*.c tests/unit/support_*.c)
TOOL_SRC := $(wildcard tests/tools/*.c)

# Shader variants: one line each in shaders/variants.txt (name, source,
# defines); each is compiled once, checked by spirv-val, and the checked
# words become an embedded array spv_NAME. A header of a variant no longer
# listed (named by an old dependency file) is removed.
# Each variant also has a packed twin, NAME_pk, compiled from the source
# as shaders/packed.awk rewrites it (see shaders/packed.glsl): the engine's
# packs run those.
# The SPIR-V does not depend on the C flags, so a build may take another
# build folder's shaders (SHB, default B): make check's sanitizer build
# uses the normal build's instead of compiling all of them again.
SHB ?= $(B)
BASE_VARIANTS := $(shell awk '!/^\#/ && NF {print $$1}' shaders/variants.txt)
VARIANTS := $(BASE_VARIANTS) $(BASE_VARIANTS:%=%_pk)
SHADER_HDRS := $(VARIANTS:%=$(SHB)/shaders/%.h)
# The variants of the benchmarks and tests alone (shaders/variants_bench.txt,
# and the cm2 ones below) go into a table of their own, shaders_bench.o,
# which the tests and tools link and vkinrd only with BENCH_SHADERS=1
# (whole-fit benchmarks of those GEMM families: VKINR_GEMM=coop_8 ...).
BENCH_BASE := $(shell awk '!/^\#/ && NF {print $$1}' shaders/variants_bench.txt)
BENCH_VARIANTS := $(BENCH_BASE) $(BENCH_BASE:%=%_pk)
BENCH_HDRS := $(BENCH_VARIANTS:%=$(SHB)/shaders/%.h)
VARIANT_LISTS := shaders/variants.txt shaders/variants_bench.txt
BENCH_SHADERS ?=
BENCH_OBJ := $(B)/shaders/shaders_bench.o
# The variants of shaders/variants_cm2.txt, with GLSLANG15 only (no packed
# twins): headers under cm2/. cm2.list records which were embedded last, so
# that finding or losing the compiler remakes the table.
CM2_VARIANTS := $(if $(GLSLANG15),$(shell awk '!/^\#/ && NF {print $$1}' shaders/variants_cm2.txt))
CM2_HDRS := $(CM2_VARIANTS:%=$(SHB)/shaders/cm2/%.h)
CM2_LIST := $(SHB)/shaders/cm2.list
$(shell mkdir -p $(SHB)/shaders && { echo '$(CM2_VARIANTS)' | cmp -s - $(CM2_LIST) || \
	echo '$(CM2_VARIANTS)' > $(CM2_LIST); })

LIB := $(B)/libvkinr.a
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o) $(B)/shaders/shaders.o
SHARED_LIB := $(B)/libvkinr-shared.a
SHARED_OBJ := $(SHARED_SRC:%.c=$(B)/%.o)
PROGS := $(B)/vkinrd $(B)/vkinrctl
TESTS := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
TOOLS := $(TOOL_SRC:tests/tools/%.c=$(B)/tools/%)

all: $(PROGS) $(TOOLS)

$(B)/%.o: %.c | $(SHB)/shaders/shaders.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

# The shared code and the client are compiled without -Idaemon, and their
# dependency files are checked: a daemon header included by either stops
# the build (a header-only use would otherwise slip past the linker).
$(B)/proto/%.o $(B)/util/%.o: INC = -I. $(CLIENT_PKG_CFLAGS)
$(B)/client/%.o: INC = -I. -Iclient $(CLIENT_PKG_CFLAGS)

$(SHB)/shaders/%.h: $(VARIANT_LISTS) shaders/packed.awk $(wildcard shaders/*.comp shaders/*.glsl shaders/*.h)
	@mkdir -p $(dir $@) $(SHB)/shaders/pk
	@name=$*; dir=shaders; case $$name in *_pk) name=$${name%_pk}; \
		dir=$(SHB)/shaders/pk;; esac; \
	set -- $$(awk -v n=$$name '$$1 == n { $$1 = ""; print }' $(VARIANT_LISTS)); \
	if [ $$# = 0 ]; then rm -f $@; exit 0; fi; \
	src=$$1; shift; \
	if [ $$dir != shaders ]; then awk -f shaders/packed.awk shaders/$$src \
		> $(SHB)/shaders/pk/$*.comp || exit 1; src=$*.comp; fi; \
	$(GLSLANG) -V --target-env vulkan1.2 -Ishaders "$$@" \
		-o $(SHB)/shaders/$*.spv $$dir/$$src > $@.log && \
	$(SPIRV_VAL) --target-env vulkan1.2 $(SHB)/shaders/$*.spv >> $@.log 2>&1 && \
	{ echo "const uint32_t spv_$*[] = {"; \
	  od -An -v -tx4 $(SHB)/shaders/$*.spv | \
		awk '{ for (i = 1; i <= NF; i++) printf "0x%s,", $$i; print "" }'; \
	  echo "};"; } > $@ || { cat $@.log; rm -f $@; exit 1; }

# A variant of shaders/variants_cm2.txt, as above but through GLSLANG15,
# checked by SPIRV_VAL15 when one is named; SPIR-V 1.6 (Vulkan 1.3), which
# glslang requires for GL_NV_cooperative_matrix2.
$(SHB)/shaders/cm2/%.h: shaders/variants_cm2.txt $(wildcard $(GLSLANG15) $(SPIRV_VAL15)) $(wildcard shaders/*.comp shaders/*.glsl shaders/*.h)
	@mkdir -p $(dir $@)
	@set -- $$(awk -v n=$* '$$1 == n { $$1 = ""; print }' shaders/variants_cm2.txt); \
	if [ $$# = 0 ] || [ -z "$(GLSLANG15)" ]; then rm -f $@; exit 0; fi; \
	src=$$1; shift; \
	$(GLSLANG15) -V --target-env vulkan1.3 -Ishaders "$$@" \
		-o $(SHB)/shaders/cm2/$*.spv shaders/$$src > $@.log && \
	{ [ -z "$(SPIRV_VAL15)" ] || $(SPIRV_VAL15) --target-env vulkan1.3 \
		$(SHB)/shaders/cm2/$*.spv >> $@.log 2>&1; } && \
	{ echo "const uint32_t spv_$*[] = {"; \
	  od -An -v -tx4 $(SHB)/shaders/cm2/$*.spv | \
		awk '{ for (i = 1; i <= NF; i++) printf "0x%s,", $$i; print "" }'; \
	  echo "};"; } > $@ || { cat $@.log; rm -f $@; exit 1; }

# The table of every embedded shader, looked up by name at run time; the
# benchmarks' and tests' in a table of their own (gpu/shaders.h).
$(SHB)/shaders/shaders.c: $(SHADER_HDRS) shaders/variants.txt
	@{ echo '/* generated by the Makefile from shaders/variants.txt */'; \
	   echo '#include "gpu/shaders.h"'; \
	   for v in $(VARIANTS); do echo "#include \"$$v.h\""; done; \
	   echo 'const struct shader_blob shader_table[] = {'; \
	   for v in $(VARIANTS); do \
	     echo "  {\"$$v\", spv_$$v, sizeof(spv_$$v)},"; done; \
	   echo '  {0, 0, 0}};'; } > $@

$(SHB)/shaders/shaders_bench.c: $(BENCH_HDRS) $(CM2_HDRS) shaders/variants_bench.txt $(CM2_LIST)
	@{ echo '/* generated by the Makefile from shaders/variants_bench.txt */'; \
	   echo '#include "gpu/shaders.h"'; \
	   for v in $(BENCH_VARIANTS); do echo "#include \"$$v.h\""; done; \
	   for v in $(CM2_VARIANTS); do echo "#include \"cm2/$$v.h\""; done; \
	   echo 'const struct shader_blob shader_table_bench[] = {'; \
	   for v in $(BENCH_VARIANTS) $(CM2_VARIANTS); do \
	     echo "  {\"$$v\", spv_$$v, sizeof(spv_$$v)},"; done; \
	   echo '  {0, 0, 0}};'; } > $@

$(B)/shaders/shaders.o: $(SHB)/shaders/shaders.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

$(BENCH_OBJ): $(SHB)/shaders/shaders_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SHARED_LIB): $(SHARED_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/vkinrd: $(B)/daemon/main.o $(LIB) $(if $(BENCH_SHADERS),$(BENCH_OBJ))
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The Slurm batch script falls back on the installed vkinrd, not the
# build tree's (client/slurm/cmd-slurm.c).
$(B)/client/slurm/cmd-slurm.o: CFLAGS += -DVKINR_BINDIR='"$(PREFIX)/bin"'

# The dashboard's page (web/) and Chart.js (Debian's libjs-chart.js), embedded
# in vkinrctl as byte arrays (dash_assets, client/views/dashboard.h): the page
# works offline and needs no file beside the program.
CHARTJS ?= /usr/share/javascript/chart.js/chart.min.js
WEB_ASSETS := /:web/dashboard.html:text/html \
	/dashboard.js:web/dashboard.js:text/javascript \
	/dashboard.css:web/dashboard.css:text/css \
	/chart.js:$(CHARTJS):text/javascript
$(B)/web/assets.c: $(wildcard web/*) $(CHARTJS) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated by the Makefile from web/ and Chart.js */'; \
	   echo '#include "client/views/dashboard.h"'; i=0; \
	   for a in $(WEB_ASSETS); do f=$$(echo $$a | cut -d: -f2); \
	     echo "static const unsigned char asset$$i[] = {"; \
	     od -An -v -tx1 $$f | awk '{ for (i = 1; i <= NF; i++) \
		printf "0x%s,", $$i; print "" }'; \
	     echo "};"; i=$$((i + 1)); done; \
	   echo 'const struct dash_asset dash_assets[] = {'; i=0; \
	   for a in $(WEB_ASSETS); do p=$$(echo $$a | cut -d: -f1); \
	     t=$$(echo $$a | cut -d: -f3); \
	     echo "  {\"$$p\", \"$$t; charset=utf-8\", asset$$i, sizeof(asset$$i)},"; \
	     i=$$((i + 1)); done; \
	   echo '  {0, 0, 0, 0}};'; } > $@

$(B)/web/assets.o: $(B)/web/assets.c
	$(CC) $(CFLAGS) -I. -c -o $@ $<

$(B)/vkinrctl: $(CLIENT_OBJ) $(B)/web/assets.o $(SHARED_LIB)
	@if grep -l '[ /]daemon/' $(CLIENT_OBJ:.o=.d) $(SHARED_OBJ:.o=.d); then \
	  echo "the files above include daemon/ headers: vkinrctl and" \
	       "the shared code may use proto/ and util/ only" >&2; exit 1; fi
	$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_PKG_LIBS) -lm

$(B)/tests/%: $(B)/tests/unit/%.o $(TEST_SUPPORT_SRC:%.c=$(B)/%.o) $(LIB) $(BENCH_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(B)/tests/unit/%.o: CFLAGS += -Itests
$(B)/tests/ref/%.o: CFLAGS += -Itests

# the client's PNG coder is tested against the daemon's
$(B)/tests/test_png8: $(B)/client/pictures/png8.o
$(B)/tests/test_png8: LDLIBS += $(CLIENT_PKG_LIBS)

$(B)/tools/%: $(B)/tests/tools/%.o $(LIB) $(BENCH_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tests: $(TESTS) $(PROGS) $(TOOLS)

deps:
	@./tests/deps.sh

# glslang 15 for the VK_NV_cooperative_matrix2 shaders (see the top)
gpu-tools:
	@./tests/deps.sh --gpu-tools

# A plain `make check` (the README's, CI's) builds on every core; an
# explicit -jN is kept (it is in MAKEFLAGS by the time a recipe runs).
BUILD_JOBS = $$(case " $$MAKEFLAGS" in *" -j"*) ;; *) echo -j$$(nproc);; esac)

# The normal build, then the sanitizer build; tests/run.sh runs the unit
# tests and the integration tests against each, TEST_JOBS (3) at a time,
# and prints the summary. The tests marked slow are check-slow's; SLOW=1
# runs everything (check-all).
check: deps
	$(MAKE) $(BUILD_JOBS) tests
	$(MAKE) $(BUILD_JOBS) B=build-asan SAN=1 SHB=build tests
	./tests/run.sh build build-asan

check-slow: deps
	$(MAKE) $(BUILD_JOBS) tests
	$(MAKE) $(BUILD_JOBS) B=build-asan SAN=1 SHB=build tests
	SLOW=only ./tests/run.sh build build-asan

check-all: deps
	$(MAKE) $(BUILD_JOBS) tests
	$(MAKE) $(BUILD_JOBS) B=build-asan SAN=1 SHB=build tests
	SLOW=1 ./tests/run.sh build build-asan

demo: deps
	$(MAKE) all
	./tests/demo.sh $(B)

bench: all
	./tests/bench.sh $(B)

# Training recipes compared on real photographs (tests/bench_quality.py):
# PSNR at fixed epochs and seconds, widths by recipes. Options through
# QUALITY, e.g. make bench-quality QUALITY="--widths 512 --epochs 400,2000"
bench-quality: all
	python3 tests/bench_quality.py --vkinrd $(B)/vkinrd $(QUALITY)

# a dataset through the engine, the daemon, one job at a time and the
# PyTorch batched peer (tests/bench_dataset.sh: N, SIZE, WIDTH, EPOCHS,
# DATA, MODES, PEER)
bench-dataset: all
	./tests/bench_dataset.sh $(B)

# on a GPU, before a speed claim: the tensor-core kernels through NV and
# KHR cooperative matrices, every pass, the whole-fit gradient checks
check-gpu: tests
	./tests/check-gpu.sh $(B)

# every GEMM family on an epoch's three shapes, timed and checked
# (BENCH_GEMM_ARGS: e.g. --widths 512 --families coop,coop_w)
bench-gemm: all
	$(B)/tools/bench_gemm $(BENCH_GEMM_ARGS)

# The CPU device (lavapipe) against the PyTorch peer, alternating, ratio of
# the medians (tests/bench_cpu.sh: ROUNDS, EPOCHS, GEMMS="small auto", ...)
bench-cpu: all
	./tests/bench_cpu.sh $(B)

# libFuzzer targets (tests/fuzz/): built with clang into build-fuzz/, each
# run for FUZZ_SECONDS; fuzz-check runs them briefly from the committed
# seeds only, and says skipped without clang (see tests/fuzz/run.sh).
fuzz:
	./tests/fuzz/run.sh $(or $(FUZZ_SECONDS),60)

fuzz-check:
	./tests/fuzz/run.sh --check $(or $(FUZZ_SECONDS),20)

install: $(PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	@# the man pages by section: vkinrctl(1) and its command pages,
	@# vkinrd-fit(1), vkinrd-env(7), vkinrd(8)
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	@# shell completion, made from vkinrctl's own command table
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(B)/vkinrctl completion bash \
		> $(DESTDIR)$(PREFIX)/share/bash-completion/completions/vkinrctl
	$(B)/vkinrctl completion zsh \
		> $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_vkinrctl
	$(B)/vkinrctl completion fish \
		> $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/vkinrctl.fish
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system \
		$(DESTDIR)$(PREFIX)/lib/systemd/user $(DESTDIR)$(PREFIX)/lib/sysusers.d
	@# the units name /usr/local/bin/vkinrd; point them at $(PREFIX)/bin
	for u in vkinrd.service vkinrd.socket; do \
	  sed 's|/usr/local/bin/vkinrd|$(PREFIX)/bin/vkinrd|g' systemd/$$u \
	    > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$u && \
	  sed 's|/usr/local/bin/vkinrd|$(PREFIX)/bin/vkinrd|g' systemd/user/$$u \
	    > $(DESTDIR)$(PREFIX)/lib/systemd/user/$$u && \
	  chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/$$u \
	    $(DESTDIR)$(PREFIX)/lib/systemd/user/$$u || exit 1; \
	done
	install -m 644 systemd/vkinrd.sysusers \
		$(DESTDIR)$(PREFIX)/lib/sysusers.d/vkinrd.conf
	@# the Python loader, outside any one Python's site-packages: a
	@# script puts the folder on sys.path (or PYTHONPATH), or runs it
	install -d $(DESTDIR)$(PREFIX)/share/vkinrd/python
	install -m 755 python/vkinr.py $(DESTDIR)$(PREFIX)/share/vkinrd/python/

clean:
	rm -rf build build-asan build-fuzz

.PHONY: bench-cpu bench-dataset all tests deps gpu-tools check check-slow check-all check-gpu demo bench bench-gemm bench-quality install clean fuzz fuzz-check
.DELETE_ON_ERROR:
# keep the unit tests' and tools' objects (intermediate files otherwise): a
# second make then relinks nothing
.SECONDARY:

-include $(shell find $(B) -name '*.d' 2>/dev/null)

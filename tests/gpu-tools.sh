#!/bin/sh
# gpu-tools.sh - builds, from Debian 13 (trixie)'s source packages, the
# shader tools that Debian 12's are too old for: glslangValidator 15 into
# .tools/glslang15/ (it compiles GL_NV_cooperative_matrix2: see
# shaders/variants_cm2.txt) and spirv-val 2025.1 into .tools/spirv-tools/
# (it reads the SPIR-V that glslang makes of it). Both folders are
# git-ignored; the Makefile uses them when they are there. Run through
# `tests/deps.sh --gpu-tools` or `make gpu-tools`. Idempotent: a tool that
# runs is not built again. As root it adds a deb-src line for trixie
# (sources only: no binary package of trixie is ever installed; their
# binaries need a newer glibc than Debian 12's) and the build packages it
# lacks; otherwise it says what is missing. Only the upstream sources are
# built (Debian's patches link glslang to the system's SPIRV-Tools, whose
# CMake rules then fail here). About 5 minutes of CPU on 2 cores in all
# (22 on a busy machine); JOBS=N sets the parallel jobs.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
glslang="$top/.tools/glslang15/bin/glslangValidator"
val="$top/.tools/spirv-tools/bin/spirv-val"
have_glslang=0 have_val=0
[ -x "$glslang" ] && "$glslang" --version >/dev/null 2>&1 && have_glslang=1
[ -x "$val" ] && "$val" --version >/dev/null 2>&1 && have_val=1
if [ $have_glslang = 1 ] && [ $have_val = 1 ]; then
	echo "gpu-tools: $glslang ($("$glslang" --version | head -1))"
	echo "gpu-tools: $val ($("$val" --version | head -1))"
	exit 0
fi
root=0
[ "$(id -u)" -eq 0 ] && root=1

# the tools that fetch and build the sources
missing=""
for p in dpkg-dev cmake g++ python3 make; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ $root = 0 ]; then
		echo "gpu-tools needs: sudo apt-get install$missing" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing >/dev/null
fi

# trixie's source packages, reachable through a deb-src line
if ! apt-cache showsrc glslang 2>/dev/null | grep -q '^Version: 15\.'; then
	list=/etc/apt/sources.list.d/trixie-src.list
	if [ $root = 0 ]; then
		echo "gpu-tools needs Debian 13's sources: as root, run" >&2
		echo "  echo 'deb-src http://deb.debian.org/debian trixie main' > $list" >&2
		echo "  apt-get update" >&2
		exit 1
	fi
	echo "gpu-tools: adding $list (source packages only)" >&2
	echo 'deb-src http://deb.debian.org/debian trixie main' > "$list"
	apt-get update -qq
fi

src="$top/.tools/src"
rm -rf "$src"
mkdir -p "$src"

# unpack PACKAGE: trixie's upstream tarball of PACKAGE into $src/PACKAGE
unpack() {
	echo "gpu-tools: fetching $1's source from trixie" >&2
	(cd "$src" && apt-get source -qq --download-only --only-source "$1/trixie" \
		>/dev/null 2>&1) || true
	tarball=$(ls "$src/$1"_*.orig.tar.* 2>/dev/null | head -1)
	[ -n "$tarball" ] || { echo "gpu-tools: no source of $1 from trixie" >&2; exit 1; }
	mkdir -p "$src/$1"
	tar -xf "$tarball" -C "$src/$1" --strip-components=1
}

# build PACKAGE TARGET BINARY DEST [cmake options]: one target of the
# unpacked source, its binary copied to DEST
build() {
	pkg=$1 target=$2 binary=$3 dest=$4
	shift 4
	echo "gpu-tools: building $target of $pkg" >&2
	cmake -S "$src/$pkg" -B "$src/$pkg-build" -DCMAKE_BUILD_TYPE=Release "$@" \
		>"$src/$pkg-cmake.log" 2>&1 ||
		{ tail -20 "$src/$pkg-cmake.log" >&2; exit 1; }
	cmake --build "$src/$pkg-build" -j"${JOBS:-2}" --target "$target" \
		>"$src/$pkg-build.log" 2>&1 ||
		{ tail -30 "$src/$pkg-build.log" >&2; exit 1; }
	mkdir -p "$(dirname "$dest")"
	cp "$src/$pkg-build/$binary" "$dest.tmp"
	mv "$dest.tmp" "$dest"
	echo "gpu-tools: $dest ($("$dest" --version | head -1))"
}

if [ $have_glslang = 0 ]; then
	unpack glslang
	build glslang glslang-standalone StandAlone/glslang "$glslang" \
		-DENABLE_OPT=OFF -DGLSLANG_TESTS=OFF
fi
if [ $have_val = 0 ]; then
	unpack spirv-tools
	unpack spirv-headers
	build spirv-tools spirv-val tools/spirv-val "$val" \
		-DSPIRV-Headers_SOURCE_DIR="$src/spirv-headers" \
		-DSPIRV_SKIP_TESTS=ON -DSPIRV_WERROR=OFF
fi
# the sources and the objects are no longer needed
rm -rf "$src"

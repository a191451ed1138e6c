#!/bin/sh
# gpu-tools.sh - builds glslangValidator 15 from Debian 13 (trixie)'s
# source package into .tools/glslang15/ (git-ignored) for the shaders that
# Debian 12's glslang 12 cannot compile (GL_NV_cooperative_matrix2; see
# shaders/variants_cm2.txt). Run through `tests/deps.sh --gpu-tools` or
# `make gpu-tools`. Idempotent: when .tools/glslang15/bin/glslangValidator
# runs it does nothing. As root it adds a deb-src line for trixie (sources
# only: no binary package of trixie is ever installed) and the build
# packages it lacks; otherwise it says what is missing. Takes about 2.5
# minutes on 2 cores.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
dest="$top/.tools/glslang15"
bin="$dest/bin/glslangValidator"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "gpu-tools: $bin is there ($("$bin" --version | head -1))"
	exit 0
fi
root=0
[ "$(id -u)" -eq 0 ] && root=1

# the tools that fetch and build the source
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

# trixie's source package, reachable through a deb-src line
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

src="$dest/src"
rm -rf "$src"
mkdir -p "$src"
echo "gpu-tools: fetching glslang's source from trixie" >&2
# Debian's patches make glslang link the system's SPIRV-Tools (too old
# here, and its CMake rules then fail): the upstream source alone builds
(cd "$src" && apt-get source -qq --download-only --only-source glslang/trixie \
	>/dev/null 2>&1 && dpkg-source -x --skip-patches glslang_*.dsc >/dev/null 2>&1)
dir=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'glslang-*' | head -1)
[ -n "$dir" ] || { echo "gpu-tools: no source folder in $src" >&2; exit 1; }
echo "gpu-tools: building $(basename "$dir") (about 2.5 minutes on 2 cores)" >&2
cmake -S "$dir" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
	-DENABLE_OPT=OFF -DGLSLANG_TESTS=OFF >"$src/cmake.log" 2>&1 ||
	{ tail -20 "$src/cmake.log" >&2; exit 1; }
cmake --build "$src/build" -j"${JOBS:-2}" --target glslang-standalone \
	>"$src/build.log" 2>&1 || { tail -30 "$src/build.log" >&2; exit 1; }
mkdir -p "$dest/bin"
cp "$src/build/StandAlone/glslang" "$bin.tmp"
mv "$bin.tmp" "$bin"
"$bin" --version | head -1
# the source and the objects are no longer needed
rm -rf "$src"
echo "gpu-tools: $bin" >&2

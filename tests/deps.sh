#!/bin/sh
# deps.sh - installs the Debian packages that building, testing and the
# demo need, when any is missing (`make deps`; `make check` and `make demo`
# call it). As root it uses apt-get; otherwise it says what to install.
#
# `tests/deps.sh --gpu-tools` (`make gpu-tools`) instead builds the newer
# shader compiler that the VK_NV_cooperative_matrix2 GEMMs need (glslang 15,
# from Debian 13's source package: its binaries need a newer glibc than
# Debian 12's) and a spirv-val that reads its output, into .tools/
# (tests/gpu-tools.sh), which the Makefile uses when they are there.
# Nothing else is installed or changed for the normal build; a second run
# finds them and does nothing.
set -e
if [ "$1" = --gpu-tools ]; then
	exec "$(dirname "$0")/gpu-tools.sh"
fi
# systemd: only for systemd-analyze and systemd-socket-activate in the
# tests (installing it starts nothing in a container); tmux: only for the
# test that reads the live view off a terminal. The wallpapers (real
# photographs) and python3-pil (to decode and scale them) are for the
# quality test and `make bench-quality`. libmicrohttpd and libjs-chart.js
# (embedded at build time) for `vkinrctl dashboard`; chromium,
# python3-websocket (to drive it) and curl for its tests. zsh and fish:
# only to check the completion scripts `vkinrctl completion` makes;
# python3-jsonrpc: a JSON-RPC 2.0 implementation of others', to compare
# the answers to batches with. python3-numpy: the Python loader
# (python/vkinr.py) and the render tests that read PNGs. webp (cwebp):
# only to make the WebP files that the WebP test sends (webpmux: to give
# one an EXIF chunk). libexif-dev: the EXIF orientation of JPEG and WebP
# photos. libcairo2-dev
# and fonts-dejavu-core: `vkinrctl plot`'s PNGs (antialiased lines, real
# text in a sans-serif font). libxxhash-dev: the jobs' keys that
# `submit --skip-done` compares (XXH3-128).
pkgs="make gcc pkg-config libuv1-dev libcjson-dev libvulkan-dev glslang-tools
libpng-dev libjpeg62-turbo-dev libwebp-dev libexif-dev zlib1g-dev mesa-vulkan-drivers spirv-tools libcmocka-dev socat
python3 systemd tmux plasma-workspace-wallpapers python3-pil
libmicrohttpd-dev libjs-chart.js chromium python3-websocket curl zsh fish
python3-jsonrpc python3-numpy webp libcairo2-dev fonts-dejavu-core libxxhash-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "vkinrd needs these Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null

#!/bin/sh
# sass_local.sh: the SASS of one CUDA file's kernels on this machine, which has nvcc but no
# cuobjdump or nvdisasm (session 48). Debian's non-free nvidia-cuda-toolkit (11.8 on bookworm)
# has nvdisasm; it reads nvcc 13's sm_90 cubins once three ELF header fields are set back to the
# older ABI (bench/cubin_abi.py; the instruction encoding is the same). The package is fetched
# once into ~/.cache/glimmer-nvdisasm (apt-get download from a temporary non-free source list;
# nothing is installed), so that instruction counts of a kernel's loop can be compared before a
# GPU call: bench/sass_count.py counts a kernel's instructions, or a region of them.
# Usage: bench/sass_local.sh FILE.cu OUT.sass [extra nvcc flags]
# Example: bench/sass_local.sh src/cuda/decode_mv_span.cu /tmp/span.sass &&
#          python3 bench/sass_count.py /tmp/span.sass k_dmv_spanILi2ELb0ELi0ELi2ELb1ELi4ELb0E
set -e
[ $# -ge 2 ] || { echo "usage: $0 FILE.cu OUT.sass [nvcc flags]" >&2; exit 2; }
src=$1 out=$2
shift 2
cd "$(dirname "$0")/.."
tool=${NVDISASM:-$HOME/.cache/glimmer-nvdisasm/usr/bin/nvdisasm}
if [ ! -x "$tool" ]; then
    dir=$HOME/.cache/glimmer-nvdisasm
    mkdir -p "$dir"
    list=$(mktemp /tmp/nonfree-XXXXXX.sources)
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$(. /etc/os-release && echo "$VERSION_CODENAME")" > "$list"
    state=$(mktemp -d /tmp/apt-state-XXXXXX)
    # its own lists and caches, so that the system's apt state is left as it was
    opts="-o Dir::Etc::sourcelist=$list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$state/lists"
    opts="$opts -o Dir::Cache=$state/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=root"
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
    apt-get $opts update > /dev/null
    (cd "$dir" && apt-get $opts download nvidia-cuda-toolkit > /dev/null 2>&1)
    dpkg -x "$dir"/nvidia-cuda-toolkit_*.deb "$dir"
    rm -rf "$list" "$state" "$dir"/nvidia-cuda-toolkit_*.deb
    [ -x "$tool" ] || { echo "$0: no nvdisasm in Debian's nvidia-cuda-toolkit" >&2; exit 1; }
fi
cubin=$(mktemp /tmp/sass-XXXXXX.cubin)
trap 'rm -f "$cubin" "$cubin.old"' EXIT
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Iinclude -Isrc -DGLIM_HAVE_CUDA "$@" -cubin -o "$cubin" "$src"
python3 bench/cubin_abi.py "$cubin" "$cubin.old"
"$tool" -c "$cubin.old" > "$out"
echo "$out: $(grep -c '^\.text\.' "$out") kernels"

#!/bin/sh
# install-deps.sh: installs the Debian packages the build and tests need, only when missing.
# Build: a C compiler, make, pkg-config, libjansson-dev (JSON), libpcre2-dev (tokenizer regex),
# libmicrohttpd-dev (HTTP, for `glimmer serve`).
# Tests: node and npm (the Hugging Face tokenizers reference for the differential tests).
set -e
need=""
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ]; }
command -v cc >/dev/null 2>&1 || need="$need gcc libc6-dev"
command -v make >/dev/null 2>&1 || need="$need make"
have_header jansson.h || need="$need libjansson-dev"
have_header pcre2.h || need="$need libpcre2-dev"
have_header microhttpd.h || need="$need libmicrohttpd-dev"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
[ -z "$need" ] && exit 0
echo "install-deps: installing$need" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null

#!/bin/sh
# fetch-device-deps.sh: downloads the Debian -dev packages the build needs and unpacks them into
# .deps/root, for carrying to a machine that has no package registry (the GPU machine).
set -e
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
(cd .deps/debs && apt-get download libjansson-dev libjansson4 libpcre2-dev libpcre2-8-0 \
    libpcre2-16-0 libpcre2-32-0 libpcre2-posix3)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
rm -rf .deps/debs

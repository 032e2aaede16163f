#!/usr/bin/env python3
"""cubin_abi.py IN OUT: an sm_90 cubin of nvcc 13 with its ELF header set to the ABI of the
CUDA 11/12 tools (OS/ABI 0x33, ABI version 7, e_flags 0x5a055a: sm_90, 64-bit addresses), so
that Debian's nvdisasm 11.8 reads it (bench/sass_local.sh). Only the header changes; the
instruction encoding of sm_90 is the same in both."""
import struct
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: cubin_abi.py IN OUT")
    b = bytearray(open(sys.argv[1], "rb").read())
    if b[:4] != b"\x7fELF" or b[4] != 2:
        sys.exit(f"{sys.argv[1]}: not a 64-bit ELF file")
    if struct.unpack_from("<H", b, 0x12)[0] != 190:  # EM_CUDA
        sys.exit(f"{sys.argv[1]}: not a CUDA ELF file")
    flags = struct.unpack_from("<I", b, 0x30)[0]
    if b[7] == 0x41 and (flags >> 8) & 0xFF != 0x5A:  # the new ABI keeps the SM in bits 8-15
        sys.exit(f"{sys.argv[1]}: not an sm_90 cubin (e_flags {flags:#x})")
    b[7], b[8] = 0x33, 7
    struct.pack_into("<I", b, 0x30, 0x005A055A)
    open(sys.argv[2], "wb").write(b)


if __name__ == "__main__":
    main()

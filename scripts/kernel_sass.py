#!/usr/bin/python3
"""One line per kernel of the given cubins (nvcc -cubin): a hash of its SASS (the ELF section .text.<kernel>), its
size in bytes and its mangled name with the anonymous namespace taken out, so the same kernel compiled from another
file or commit compares equal. No cuobjdump needed. Two builds run the same code where the hashes agree.
Usage: kernel_sass.py FILE.cubin...      e.g. nvcc -std=c++17 -I. -gencode=arch=compute_90a,code=sm_90a -O3 \\
       -cubin kernels/gemm/sm90.cu -o sm90.cubin && scripts/kernel_sass.py sm90.cubin"""
import hashlib
import re
import struct
import sys


def sections(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit("%s: not a 64-bit ELF (a cubin)" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for name, _, _, _, off, size in headers:
        end = data.index(b"\0", strtab + name)
        yield data[strtab + name:end].decode(), data[off:off + size]


def without_anonymous_namespace(name):
    # "<len>_GLOBAL__N__<hash>_<file>..." is the anonymous namespace of one translation unit: cut it by its length.
    while True:
        m = re.search(r"(\d+)_GLOBAL__N__", name)
        if not m:
            return name
        start = m.start(1) + len(m.group(1))
        name = name[:m.start()] + "ANON" + name[start + int(m.group(1)):]


for path in sys.argv[1:]:
    for section, text in sections(path):
        if section.startswith(".text."):
            print(hashlib.sha256(text).hexdigest()[:16], len(text), without_anonymous_namespace(section[6:]))

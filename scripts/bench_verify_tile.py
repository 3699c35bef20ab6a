"""Tiles a full bf16-wire gemmar dump along M: rank r's file for M' = T * M holds rows i % M of a, a_scale, out and
partial (b, b_scale unchanged), so a small dump that `gemmar run --dump` computed becomes a full-size one that still
verifies: on the bf16 wire every view of a row is the reduce of that row's partials, whoever owns it. Stdlib only.

    python3 scripts/bench_verify_tile.py SRC_DIR DST_DIR TIMES
"""
import json
import os
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def tile_rows(buf, rows, times):  # a row-major [rows, ...] buffer repeated along its first axis
    return buf * times


def tile(src, dst, times):
    header, data = read(src)
    meta = header.pop("__metadata__", {})
    if meta.get("gather_dtype") != "bf16" or meta.get("quant") != "blockscale" or "rows" in header:
        sys.exit(f"{src}: tiling needs a full blockscale dump on the bf16 wire")
    m = header["a"]["shape"][0]
    out_tensors = []
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b = data[t["data_offsets"][0]:t["data_offsets"][1]]
        shape = list(t["shape"])
        if name in ("a", "out", "partial"):
            b, shape[0] = b * times, shape[0] * times
        elif name == "a_scale":  # [K/128, M]: each K-block row of M scales repeats
            row = len(b) // shape[0]
            b = b"".join(b[i * row:(i + 1) * row] * times for i in range(shape[0]))
            shape[1] *= times
        out_tensors.append((name, t["dtype"], shape, b))
    meta["m"] = str(m * times)
    h, off = {"__metadata__": meta}, 0
    for name, dtype, shape, b in out_tensors:
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    with open(dst + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for _, _, _, b in out_tensors:
            f.write(b)
    os.replace(dst + ".tmp", dst)


def main():
    src, dst, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(dst, exist_ok=True)
    for f in sorted(os.listdir(src)):
        if f.endswith(".safetensors"):
            tile(os.path.join(src, f), os.path.join(dst, f), times)


if __name__ == "__main__":
    main()

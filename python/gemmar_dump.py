"""Dump one rank's gemm_ar tensors for `gemmar verify` (docs/verify.md).

Stdlib only; takes torch tensors (any device, any strides), numpy arrays, or `Raw` byte buffers. One safetensors
file per rank: the standard format (8-byte little-endian header length, a JSON header, the raw bytes), readable
by `safetensors.torch.load_file` as well.

The three-line patch for a benchmark loop (after the op ran, on every rank):

    import gemmar_dump                                   # PYTHONPATH=<gemmar>/python
    if os.environ.get("GEMMAR_DUMP"):                    # a directory (created); each rank writes DIR/rank<R>.safetensors
        gemmar_dump.dump(os.environ["GEMMAR_DUMP"], rank, world, a, b, a_scale, b_scale, out, partial=c,
                         quant="blockscale", mode=args.mode, gather_dtype=args.gather_dtype,
                         gather_transport=args.gather_transport)

then `gemmar verify $GEMMAR_DUMP`.

Tensors (per rank; M is the op's M, real rows only or padded, as the implementation holds them):
    a        [M, K] fp8 e4m3 codes (torch.float8_e4m3fn -> F8_E4M3; float8_e4m3fnuz or uint8 -> U8 + fp8_format)
    b        [N, K] fp8 codes, same dtype as a
    a_scale  fp32. blockscale: torch._scaled_mm's [M, K/128] (any strides) or the stored [K/128, M]; written as
             [K/128, M] row-major (= column-major [M, K/128], docs/spec.md 1.2). ptpc: [M] (or [M, 1]). mxfp8: [M, K/32].
    b_scale  fp32. blockscale: [N/128, K/128] (or its transpose [K/128, N/128], as passed to torch._scaled_mm);
             ptpc: [N] (or [N, 1]); mxfp8: [N/32, K/32] (one per 32x32 block, as mori's weights).
    out      [M, N] bf16, the op's output on this rank
    partial  [M, N] bf16, optional: this rank's GEMM result before the collective (enables the bit-exact check)
    wire, wire_scale  optional (fp8 wire, full dumps): the owned slice's codes [M_pad/W, N] and row scales [M_pad/W]
             (as the implementation sent them: gemmar verify names the quantization recipe, mori's or a variant)
    scatter, scatter_scale  optional (fp8 scatter, mori's --scatter-dtype fp8): this rank's whole narrowed partial as
             its scatter leg carried it, codes [M, N] and one fp32 scale per row per 256 columns [M, N/256] (mori's
             input region and input_scale_off; the rows of `rows` in a row-subset dump); sets scatter_dtype=fp8
    rows     optional int64 [R]: the dump holds only these global rows of a, a_scale, out, partial (pass m=M)
"""

import ctypes
import json
import os
import struct

__all__ = ["dump", "Raw", "FORMAT", "VERSION", "CONFIG"]

FORMAT = "gemmar-dump"
VERSION = "1"

# The mode and quant rows of common/modes.hpp (tests/common/common_modes_test.cpp checks they agree). A scale
# block is `rows` x `k` values (k 0: the whole K, stored without a K dimension); k_major: stored [K/k, rows].
MODES = {
    "gemm-only": {"collective": False, "fused": False, "scatter_by_copy_engine": False,
                  "two_stage_allreduce": False, "fp8_wire": False},
    "split-sdma": {"collective": True, "fused": False, "scatter_by_copy_engine": True,
                   "two_stage_allreduce": False, "fp8_wire": True},
    "fused-sdma": {"collective": True, "fused": True, "scatter_by_copy_engine": True,
                   "two_stage_allreduce": False, "fp8_wire": True},
    "split-lsa": {"collective": True, "fused": False, "scatter_by_copy_engine": False,
                  "two_stage_allreduce": True, "fp8_wire": False},
    "fused-lsa": {"collective": True, "fused": True, "scatter_by_copy_engine": False,
                  "two_stage_allreduce": False, "fp8_wire": True},
}
QUANTS = {
    "blockscale": {"block_m": 128, "e8m0_scales": False,
                   "a": {"rows": 1, "k": 128, "k_major": True}, "b": {"rows": 128, "k": 128, "k_major": False}},
    "ptpc": {"block_m": 256, "e8m0_scales": False,
             "a": {"rows": 1, "k": 0, "k_major": False}, "b": {"rows": 1, "k": 0, "k_major": False}},
    "mxfp8": {"block_m": 256, "e8m0_scales": True,
              "a": {"rows": 1, "k": 32, "k_major": False}, "b": {"rows": 32, "k": 32, "k_major": False}},
}


# The config keys of a dump's metadata and their defaults, as common/config_fields.cpp's table writes them (bools
# as "1"/"0"); tests/common/common_config_fields_test.cpp checks they agree. dump() takes any of them as a keyword
# (mode=..., scatter_dtype="fp8", chunk_bands=2, relaxed_rows=True, ...); an absent one means its default.
CONFIG = {
    "mode": "fused-sdma", "quant": "blockscale", "gather_dtype": "bf16", "gather_transport": "sdma",
    "pull_blocks": "64", "fuse_quantize": "0", "fuse_reduce_push": "0", "gather_bands": "8",
    "publish": "writethrough", "scatter_dtype": "bf16", "chunk_rule": "bench", "schedule": "none", "chunks": "0",
    "chunk_bands": "0", "relaxed_rows": "0", "logical_m": "0", "sdma_queues": "8",
}


def _config_text(value):
    """A config value as the metadata holds it: bools as 1/0, the rest as str()."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _stored_scale_shape(quant, operand, rows, k):
    """The scale tensor's shape as the file stores it (verify_files.cpp's scale_shape)."""
    blk = QUANTS[quant][operand]
    rb, kb = rows // blk["rows"], k // (blk["k"] or k)
    if not blk["k"]:
        return [rb]
    return [kb, rb] if blk["k_major"] else [rb, kb]

_SIZES = {"U8": 1, "I8": 1, "F8_E4M3": 1, "BF16": 2, "F16": 2, "F32": 4, "I32": 4, "I64": 8, "F64": 8}


class Raw:
    """Bytes already in the file's layout: Raw("F32", [16, 2048], data)."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, [int(s) for s in shape], bytes(data)
        n = _SIZES[dtype]
        for s in self.shape:
            n *= s
        if n != len(self.data):
            raise ValueError("Raw %s %s: %d bytes, expected %d" % (dtype, self.shape, len(self.data), n))


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _dtype_name(x):
    """(safetensors dtype, fp8 format or None) of a tensor-like."""
    if isinstance(x, Raw):
        return x.dtype, None
    name = str(x.dtype).replace("torch.", "")
    table = {
        "float8_e4m3fn": ("F8_E4M3", "e4m3fn"),
        "float8_e4m3fnuz": ("U8", "e4m3fnuz"),
        "uint8": ("U8", None),
        "int8": ("I8", None),
        "bfloat16": ("BF16", None),
        "float16": ("F16", None),
        "float32": ("F32", None),
        "int32": ("I32", None),
        "int64": ("I64", None),
        "float64": ("F64", None),
    }
    if name not in table:
        raise TypeError("gemmar_dump: unsupported dtype %s" % name)
    return table[name]


def _shape(x):
    return [int(s) for s in x.shape]


def _transpose(x):
    if isinstance(x, Raw):
        raise ValueError("gemmar_dump: a Raw tensor must already be in the file's layout")
    return x.t() if _is_torch(x) else x.T


class _Bytes:
    """A contiguous CPU view of a tensor-like, written without an extra copy where possible."""

    def __init__(self, x):
        if isinstance(x, Raw):
            self.buf, self.keep = x.data, None
        elif _is_torch(x):
            t = x.detach().to("cpu").contiguous()
            n = t.numel() * t.element_size()
            self.keep = t  # keeps the memory alive while written
            self.buf = (ctypes.c_char * n).from_address(t.data_ptr()) if n else b""
        else:  # numpy
            import numpy as np  # only when numpy arrays are passed

            a = np.ascontiguousarray(x)
            self.keep, self.buf = a, memoryview(a).cast("B")


def _as_f32(x):
    if isinstance(x, Raw) or _dtype_name(x)[0] == "F32":
        return x
    return x.float() if _is_torch(x) else x.astype("float32")


def _layout_scales(quant, a_scale, b_scale, m_rows, n, k):
    if quant not in QUANTS:
        raise ValueError("gemmar_dump: quant must be %s, not %r" % ("|".join(QUANTS), quant))
    a_scale, b_scale = _as_f32(a_scale), _as_f32(b_scale)
    sa, sb = _shape(a_scale), _shape(b_scale)
    want_a, want_b = _stored_scale_shape(quant, "a", m_rows, k), _stored_scale_shape(quant, "b", n, k)
    if quant == "blockscale":
        if sa == want_a[::-1] and sa != want_a:
            a_scale = _transpose(a_scale)  # torch._scaled_mm's logical [M, K/128] -> stored [K/128, M]
        if sb == want_b[::-1] and sb != want_b:
            b_scale = _transpose(b_scale)  # the sb.t() passed to torch._scaled_mm -> [N/128, K/128]
    elif len(want_a) == 1:  # one scale per row: [rows, 1] is accepted for [rows]
        if len(sa) == 2 and sa[1] == 1:
            a_scale = a_scale.reshape(-1) if not isinstance(a_scale, Raw) else a_scale
        if len(sb) == 2 and sb[1] == 1:
            b_scale = b_scale.reshape(-1) if not isinstance(b_scale, Raw) else b_scale
    return a_scale, b_scale


def _rank_file(path, rank):
    """<path>/rank<rank>.safetensors, the directory created; a path that is a file, or names one, is refused (each
    rank writing one file path would leave one file, the last rank's)."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError("gemmar_dump: %s is an existing file; give a directory (rank R writes DIR/rank<R>.safetensors)"
                         % path)
    if path.rstrip("/").endswith(".safetensors"):
        raise ValueError("gemmar_dump: %s names a file; give a directory (rank R writes DIR/rank<R>.safetensors)" % path)
    os.makedirs(path, exist_ok=True)
    return os.path.join(path, "rank%d.safetensors" % int(rank))


def dump(path, rank, world, a, b, a_scale, b_scale, out, *, partial=None, wire=None, wire_scale=None, rows=None,
         scatter=None, scatter_scale=None, m=None, quant="blockscale", mode="fused-sdma", gather_dtype="bf16", gather_transport="sdma",
         fp8_format=None, fuse_quantize=False, pull_blocks=None, **metadata):
    """Writes rank `rank`'s tensors to <path>/rank<rank>.safetensors, creating the directory `path` (every rank of a
    run writes its own file into the same directory). Returns the file."""
    path = _rank_file(path, rank)
    a_dt, a_fmt = _dtype_name(a)
    b_dt, b_fmt = _dtype_name(b)
    if a_dt != b_dt or a_fmt != b_fmt:
        raise TypeError("gemmar_dump: a (%s) and b (%s) must have the same fp8 dtype" % (a.dtype, b.dtype))
    fmt = fp8_format or a_fmt
    if fmt is None:
        raise ValueError("gemmar_dump: uint8 codes need fp8_format='e4m3fn' or 'e4m3fnuz'")
    if a_fmt is not None and fp8_format is not None and fp8_format != a_fmt:
        raise ValueError("gemmar_dump: fp8_format=%r contradicts the dtype of a (%s)" % (fp8_format, a.dtype))
    m_rows, k = _shape(a)
    n = _shape(b)[0]
    a_scale, b_scale = _layout_scales(quant, a_scale, b_scale, m_rows, n, k)

    meta = {
        "format": FORMAT, "version": VERSION, "producer": "gemmar_dump.py",
        "rank": str(int(rank)), "world": str(int(world)), "mode": mode, "quant": quant,
        "gather_dtype": gather_dtype, "gather_transport": gather_transport, "fp8_format": fmt,
        "fuse_quantize": "1" if fuse_quantize else "0", "m": str(int(m if m is not None else m_rows)),
        "n": str(n), "k": str(k),
    }
    if pull_blocks is None and os.environ.get("MORI_GEMM_AR_PULL_BLOCKS"):
        pull_blocks = os.environ["MORI_GEMM_AR_PULL_BLOCKS"]
    if pull_blocks is not None:
        meta["pull_blocks"] = str(int(pull_blocks))
    for key, value in metadata.items():
        meta[key] = _config_text(value) if key in CONFIG else str(value)

    named = [("a", a), ("a_scale", a_scale), ("b", b), ("b_scale", b_scale), ("out", out)]
    if partial is not None:
        named.append(("partial", partial))
    if wire is not None:
        named += [("wire", wire), ("wire_scale", _as_f32(wire_scale))]
    if scatter is not None:
        named += [("scatter", scatter), ("scatter_scale", _as_f32(scatter_scale))]
        meta.setdefault("scatter_dtype", "fp8")
    if rows is not None:
        if m is None:
            raise ValueError("gemmar_dump: a row-subset dump (rows=...) needs m= (the run's M)")
        named.append(("rows", rows if isinstance(rows, Raw) or not isinstance(rows, (list, tuple))
                      else Raw("I64", [len(rows)], struct.pack("<%dq" % len(rows), *rows))))

    header, views, offset = {"__metadata__": meta}, [], 0
    for name, t in named:
        dt, _ = _dtype_name(t)
        if name in ("a", "b", "wire", "scatter") and dt == "F8_E4M3" and fmt != "e4m3fn":
            raise ValueError("gemmar_dump: %s is float8_e4m3fn but fp8_format is %s" % (name, fmt))
        v = _Bytes(t)
        nbytes = len(v.buf) if isinstance(v.buf, (bytes, memoryview)) else ctypes.sizeof(v.buf)
        header[name] = {"dtype": dt, "shape": _shape(t), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
        views.append(v)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for v in views:
            f.write(v.buf)
    os.replace(tmp, path)
    return path

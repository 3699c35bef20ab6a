#!/usr/bin/env python3
"""gemmar's runner for a Python implementation of gemm_ar (`gemmar validate|run --backend python`, docs/python.md).

gemmar starts this script; a user seldom does. It loads an implementation (`--impl MODULE:CALLABLE`,
`FILE.py:CALLABLE` or `mori`), and for each run of the plan gemmar wrote (a config at one M) it generates the
benchmark's operands on every rank, calls the implementation once for the tensors (dumped with gemmar_dump, one
safetensors file per rank, for `gemmar verify`'s bit-exact checks), times it as mori's benchmark times it (one call
captured in a CUDA graph, replayed: the median of the timed replays, per rank), and prints one line per event on
stdout, which gemmar reads:

    DESCRIBE_JSON {...}   what the implementation is and which candidate configs it supports (command describe)
    SELFTEST_JSON {...}   one per config: the implementation's self_test (command selftest)
    RUN_START {...}       a run begins (its index)
    RESULT_JSON {...}     rank 0, a run's record: the benchmark's keys (mode, world_size, m, n, k, quant, the wire,
                          max_rank_time_us, per_rank_time_us, critical_rank, timing) + impl, run_index, dump
    RUN_FAILED {...}      a rank's run raised: its rank and the exception (gemmar names it)
    RUNNER_ERROR {...}    the runner cannot start: {"exit": 2|3, "message"} (3: something is missing, e.g. torch)

    python3 gemmar_runner.py describe|selftest|run PLAN.json

The implementation protocol (docs/python.md has the whole contract):

    ranks_per_process  "one" (one rank per process: torchrun or gemmar starts W processes) or "all" (every rank's
                       tensors in one process, e.g. W ranks on one device); default "one"
    array              "torch" (default) or "numpy" (CPU: no device, no timing; gemmar's tests)
    queue_wait_s       seconds gemmar waits between two process starts (mori: 10); default 0
    default_m          the M list it runs when none is given; default gemmar's
    supports(config, shape) -> bool            config: gemmar's Config as JSON; shape: {m, n, k, world}
    setup(config, shape, rank, device) -> handle    rank None with "all"; shape also holds m_max (this process)
    prepare(handle, a, a_scale, b, b_scale) -> args   optional, untimed (weights converted once)
    call(handle, *args) -> out                     "all": lists indexed by rank in, a list out
    call_with_partials(handle, *args) -> (out, partial)   optional: the GEMM output before the collective
    self_test(handle)                              optional: raises when the collective does not move data
    record_fields(handle) -> dict                  optional: extra RESULT_JSON fields (block_m, chunks, ...)
    teardown(handle), close()                      optional

Operands, as mori's bench_gemm_ar.py @d54433365ce8 make_operands: per rank a generator seeded seed + rank; A [M, K]
and B [N, K] = randn / 8 cast to e4m3fn; blockscale scales rand * 0.01 + 0.01, A's [M, K/128] column-major and B's
[N/128, K/128]; ptpc [M] and [N]; mxfp8 ue8m0 exponent bytes drawn from {120, 121, 122}, A [M, K/32], B [N/32, K/32]
(uint8; dumped as their fp32 values). numpy implementations get the same distributions from numpy's generator.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

# Implementations import this module (for group() and the numpy fp8 helpers): run as a script, it is that module.
if __name__ == "__main__":
    sys.modules.setdefault("gemmar_runner", sys.modules["__main__"])
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import gemmar_dump  # noqa: E402

EXIT_RUN_FAILED, EXIT_USAGE, EXIT_ENVIRONMENT = 1, 2, 3
# --impl mori: the adapter over mori's public op (python/gemmar_mori_impl.py).
ALIASES = {"mori": "gemmar_mori_impl:MoriGemmAr"}
# What mori's anvil.cpp prints when the SDMA queues of a previous job are not yet released (mori's op worker:
# "back-to-back 8-rank jobs fail in hsaKmtCreateQueueExt (anvil.cpp:237)"); gemmar retries such a run once.
QUEUE_FAILURE = "hsaKmtCreateQueueExt"
SCALE_BLOCK = {"blockscale": 128, "mxfp8": 32}


class RunnerError(Exception):
    """The runner cannot go on: exit 2 (bad plan or implementation) or 3 (something missing)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def emit(tag, obj):
    # One write of the whole line: ranks share torchrun's stdout, and a line written in two parts could be split by
    # another rank's output.
    sys.stdout.write(tag + " " + json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def exception_text(e):
    return "%s: %s" % (type(e).__name__, e)


# ---- the implementation -----------------------------------------------------------------------------------------

def _import_module(spec, module_part):
    if module_part.endswith(".py") or os.sep in module_part:
        path = os.path.abspath(module_part)
        if not os.path.isfile(path):
            raise RunnerError(EXIT_ENVIRONMENT, "--impl %s: no such file %s" % (spec, path))
        if os.path.dirname(path) not in sys.path:
            sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        found = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(found)
        sys.modules[name] = module
        found.loader.exec_module(module)
        return module
    return importlib.import_module(module_part)


def load_impl(spec):
    """The implementation object named by MODULE:CALLABLE / FILE.py:CALLABLE / an alias; RunnerError otherwise."""
    resolved = ALIASES.get(spec, spec)
    module_part, sep, attr = resolved.rpartition(":")
    if not sep or not module_part or not attr:
        raise RunnerError(EXIT_USAGE, "--impl %r: expected MODULE:CALLABLE, FILE.py:CALLABLE or one of %s"
                          % (spec, ", ".join(sorted(ALIASES))))
    try:
        module = _import_module(spec, module_part)
    except ModuleNotFoundError as e:
        missing = e.name or str(e)
        what = "the module itself is not on the path (%s)" % ":".join(sys.path[:3]) \
            if missing == module_part else "needed by %s" % module_part
        raise RunnerError(EXIT_ENVIRONMENT, "--impl %s: cannot import %r: %s" % (spec, missing, what))
    except ImportError as e:
        raise RunnerError(EXIT_ENVIRONMENT, "--impl %s: %s" % (spec, e))
    except RunnerError:
        raise
    except Exception as e:  # a broken implementation file is the user's input
        raise RunnerError(EXIT_USAGE, "--impl %s: importing %s raised %s" % (spec, module_part, exception_text(e)))
    obj = getattr(module, attr, None)
    if obj is None:
        raise RunnerError(EXIT_USAGE, "--impl %s: %s has no %r" % (spec, module_part, attr))
    impl = obj() if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "supports")) else obj
    for method in ("supports", "setup", "call"):
        if not callable(getattr(impl, method, None)):
            raise RunnerError(EXIT_USAGE, "--impl %s: the implementation has no %s() (docs/python.md)" % (spec, method))
    placement = getattr(impl, "ranks_per_process", "one")
    array = getattr(impl, "array", "torch")
    if placement not in ("one", "all") or array not in ("torch", "numpy"):
        raise RunnerError(EXIT_USAGE, "--impl %s: ranks_per_process must be 'one' or 'all' (got %r), array 'torch' "
                          "or 'numpy' (got %r)" % (spec, placement, array))
    return impl


def impl_name(impl, spec):
    return getattr(impl, "name", None) or spec


# ---- process groups: the ranks of one-rank-per-process implementations ----------------------------------------------

class SoloGroup:
    """Every rank in this process."""
    rank, world = 0, 1

    def barrier(self):
        pass

    def gather(self, obj):
        return [obj]

    def abort(self):
        pass


class TorchGroup:
    """torch.distributed over gloo (mori's benchmark: init_process_group(backend="cpu:gloo")), from the environment
    torchrun (or gemmar's direct launcher) sets: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""

    def __init__(self, torch):
        import torch.distributed as dist
        self.dist = dist
        if not dist.is_initialized():
            dist.init_process_group(backend="cpu:gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def barrier(self):
        self.dist.barrier()

    def gather(self, obj):
        out = [None] * self.world
        self.dist.all_gather_object(out, obj)
        return out

    def abort(self):
        pass  # torchrun (or gemmar) ends the other ranks when this one exits


class GroupAborted(RuntimeError):
    pass


class FileGroup:
    """Ranks in separate processes without torch (numpy implementations: gemmar's tests), meeting in a directory
    gemmar names in GEMMAR_RUNNER_RENDEZVOUS. A rank that fails writes `abort`, so the others stop waiting."""

    def __init__(self, directory, rank, world, poll_s=0.005):
        self.dir, self.rank, self.world, self.poll = directory, rank, world, poll_s
        self.step = 0
        os.makedirs(directory, exist_ok=True)

    def _wait(self, paths):
        while not all(os.path.exists(p) for p in paths):
            if os.path.exists(os.path.join(self.dir, "abort")):
                raise GroupAborted("another rank failed")
            time.sleep(self.poll)

    def exchange(self, name, write, read):
        """Every rank writes its part (write(path)), then reads everyone's (read(path) per rank, in rank order)."""
        self.step += 1
        stem = os.path.join(self.dir, "%06d-%s" % (self.step, name))
        mine = "%s.%d" % (stem, self.rank)
        write(mine + ".tmp")
        os.replace(mine + ".tmp", mine)
        paths = ["%s.%d" % (stem, r) for r in range(self.world)]
        self._wait(paths)  # every step has its own files: nothing is overwritten while another rank reads
        return [read(p) for p in paths]

    def gather(self, obj):
        def write(path):
            with open(path, "w") as f:
                json.dump(obj, f)

        def read(path):
            with open(path) as f:
                return json.load(f)
        return self.exchange("gather", write, read)

    def barrier(self):
        self.gather(None)

    def abort(self):
        open(os.path.join(self.dir, "abort"), "w").close()


_GROUP = SoloGroup()


def group():
    """This process's group (implementations with ranks_per_process "one" and array "numpy" use it for their
    collective; torch implementations use torch.distributed, which the runner has initialised)."""
    return _GROUP


# ---- numpy: fp8 e4m3fn and bf16 by the bit, for numpy implementations and operands ----------------------------------

def _np():
    import numpy as np
    return np


def e4m3fn_decode(codes):
    """uint8 e4m3fn codes -> float32 (0x7f/0xff NaN; no infinities)."""
    np = _np()
    c = np.asarray(codes, dtype=np.uint8).astype(np.int32)
    e, m = (c >> 3) & 15, (c & 7).astype(np.float32)
    v = np.where(e == 0, m * np.float32(2.0 ** -9), (1 + m / 8) * np.exp2((e - 7).astype(np.float32)))
    v = np.where((c & 0x7f) == 0x7f, np.float32(np.nan), v).astype(np.float32)
    return np.where(c & 0x80, -v, v).astype(np.float32)


def e4m3fn_encode(x):
    """float32 -> e4m3fn codes, round to nearest even; beyond 464 (448's upper midpoint) NaN, as torch converts."""
    np = _np()
    x = np.asarray(x, dtype=np.float32)
    values = e4m3fn_decode(np.arange(127, dtype=np.uint8))  # codes 0..126: every finite non-negative value, rising
    mag = np.abs(x)
    hi = np.clip(np.searchsorted(values, mag), 1, 126)
    lo = hi - 1
    d_lo, d_hi = mag - values[lo], values[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo).astype(np.uint8)
    code = np.where(mag > 464.0, np.uint8(0x7f), code)
    code = np.where(np.isnan(x), np.uint8(0x7f), code)
    return (code | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))).astype(np.uint8)


def bf16_bits(x):
    """float32 -> bf16 bits (uint16), round to nearest even."""
    np = _np()
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (b + (np.uint32(0x7fff) + ((b >> 16) & 1))) >> 16
    return np.where(np.isnan(x), np.uint32(0x7fc0), rounded).astype(np.uint16)


def bf16_value(bits):
    np = _np()
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ---- operands: mori's bench_gemm_ar.py @d54433365ce8 make_operands, per rank -------------------------------------------

def torch_operands(torch, quant, m, n, k, seed, rank, device):
    g = torch.Generator(device=device).manual_seed(seed + rank)
    a = (torch.randn(m, k, generator=g, device=device) / 8).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, generator=g, device=device) / 8).to(torch.float8_e4m3fn)
    f32 = dict(generator=g, device=device, dtype=torch.float32)
    if quant == "ptpc":
        return a, torch.rand(m, **f32) * 0.01 + 0.01, b, torch.rand(n, **f32) * 0.01 + 0.01
    if quant == "mxfp8":
        def e8(shape):
            return torch.randint(120, 123, shape, generator=g, device=device, dtype=torch.int32).to(torch.uint8)
        sa = e8((m, k // 32))
        return a, sa.contiguous(), b, e8((n // 32, k // 32)).contiguous()
    sa = torch.rand(m, k // 128, **f32) * 0.01 + 0.01
    sb = torch.rand(n // 128, k // 128, **f32) * 0.01 + 0.01
    return a, sa.t().contiguous().t(), b, sb.contiguous()


def numpy_operands(quant, m, n, k, seed, rank):
    np = _np()
    g = np.random.Generator(np.random.PCG64(seed + rank))
    a = e4m3fn_encode((g.standard_normal((m, k), dtype=np.float32) / 8).astype(np.float32))
    b = e4m3fn_encode((g.standard_normal((n, k), dtype=np.float32) / 8).astype(np.float32))
    if quant == "ptpc":
        return a, (g.random(m, dtype=np.float32) * 0.01 + 0.01), b, (g.random(n, dtype=np.float32) * 0.01 + 0.01)
    if quant == "mxfp8":
        return a, g.integers(120, 123, (m, k // 32)).astype(np.uint8), b, \
            g.integers(120, 123, (n // 32, k // 32)).astype(np.uint8)
    return a, (g.random((m, k // 128), dtype=np.float32) * 0.01 + 0.01), b, \
        (g.random((n // 128, k // 128), dtype=np.float32) * 0.01 + 0.01)


def dump_scales(quant, a_scale, b_scale, torch):
    """The scales as gemmar's dump stores them: mxfp8's exponent bytes become the fp32 powers of two they denote."""
    if quant != "mxfp8":
        return a_scale, b_scale
    if torch is not None:
        return torch.exp2(a_scale.float() - 127.0), torch.exp2(b_scale.float() - 127.0)
    np = _np()
    return (np.exp2(a_scale.astype(np.float32) - 127.0).astype(np.float32),
            np.exp2(b_scale.astype(np.float32) - 127.0).astype(np.float32))


# ---- one process's context ------------------------------------------------------------------------------------------

class Context:
    """What every run of this process shares: the plan, the implementation, torch (or not), the ranks held here."""

    def __init__(self, plan):
        global _GROUP
        self.plan = plan
        self.spec = plan["impl"]
        self.impl = load_impl(self.spec)
        self.name = impl_name(self.impl, self.spec)
        self.placement = getattr(self.impl, "ranks_per_process", "one")
        self.array = getattr(self.impl, "array", "torch")
        shape = plan["shape"]
        self.n, self.k, self.world = shape["n"], shape["k"], shape["world"]
        self.seed = plan.get("seed", 1234)
        self.torch = self._import_torch() if self.array == "torch" else None
        self.device, self.device_name = self._device()
        if self.placement == "all":
            self.group, self.ranks = SoloGroup(), list(range(self.world))
        else:
            rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
            if world != self.world:
                raise RunnerError(EXIT_USAGE, "the plan's world is %d but WORLD_SIZE is %d" % (self.world, world))
            self.group = TorchGroup(self.torch) if self.array == "torch" else \
                FileGroup(os.environ.get("GEMMAR_RUNNER_RENDEZVOUS", "."), rank, world)
            self.ranks = [self.group.rank]
        _GROUP = self.group

    def _import_torch(self):
        try:
            import torch
        except ImportError as e:
            raise RunnerError(EXIT_ENVIRONMENT, "--impl %s needs torch: %s" % (self.spec, e))
        return torch

    def _device(self):
        if self.torch is None:
            return None, "CPU (numpy)"
        torch = self.torch
        if not torch.cuda.is_available():
            raise RunnerError(EXIT_ENVIRONMENT, "--impl %s: torch %s finds no GPU" % (self.spec, torch.__version__))
        local = int(os.environ.get("LOCAL_RANK", "0")) if self.placement == "one" else 0
        torch.cuda.set_device(local)
        return torch.device("cuda", local), torch.cuda.get_device_name(local)

    def device_text(self):
        per = self.world if self.placement == "all" else 1
        where = "%d ranks on 1 device" % per if per > 1 else "1 rank per device"
        return "%s (%s, %s)" % (self.device_name, self.name, where)

    def shape(self, m, m_max):
        return dict(m=m, n=self.n, k=self.k, world=self.world, m_max=m_max)

    def operands(self, quant, m):
        """Per rank held here: (a, a_scale, b, b_scale)."""
        if self.torch is not None:
            return [torch_operands(self.torch, quant, m, self.n, self.k, self.seed, r, self.device) for r in self.ranks]
        return [numpy_operands(quant, m, self.n, self.k, self.seed, r) for r in self.ranks]

    def close(self):
        close = getattr(self.impl, "close", None)
        if callable(close):
            close()


# ---- describe ---------------------------------------------------------------------------------------------------------

def describe(plan):
    """What the implementation is, the world it runs at, and which candidate configs it supports at each M."""
    spec = plan["impl"]
    impl = load_impl(spec)
    placement = getattr(impl, "ranks_per_process", "one")
    array = getattr(impl, "array", "torch")
    info = dict(name=impl_name(impl, spec), placement=placement, array=array,
                queue_wait_s=float(getattr(impl, "queue_wait_s", 0.0)),
                default_m=list(getattr(impl, "default_m", None) or []), python=sys.executable,
                torchrun=importlib.util.find_spec("torch") is not None, device=None, device_count=0)
    if array == "torch":
        try:
            import torch
        except ImportError as e:
            raise RunnerError(EXIT_ENVIRONMENT, "--impl %s needs torch: %s" % (spec, e))
        info["torch"] = torch.__version__
        info["device_count"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if info["device_count"]:
            info["device"] = torch.cuda.get_device_name(0)
    shape = plan["shape"]
    world = shape.get("world")
    if world is None:
        world = info["device_count"] if placement == "one" and info["device_count"] else plan["default_world"]
    info["world"] = world
    ms = plan.get("m_values") or info["default_m"] or plan["fallback_m"]
    info["m_values"] = ms
    info["supported"] = [[bool(impl.supports(c, dict(m=m, n=shape["n"], k=shape["k"], world=world))) for m in ms]
                         for c in plan["candidates"]]
    emit("DESCRIBE_JSON", info)


# ---- self-test --------------------------------------------------------------------------------------------------------

def selftest(ctx):
    """The implementation's self_test for every config of the plan, at the plan's smallest M."""
    m = min(r["m"] for r in ctx.plan["runs"])
    test = getattr(ctx.impl, "self_test", None)
    for i, run in enumerate(ctx.plan["runs"]):
        t0, message, provided = time.time(), "", callable(test)
        if provided:
            handle = None
            try:
                handle = ctx.impl.setup(run["config"], ctx.shape(m, m), None if ctx.placement == "all" else
                                        ctx.group.rank, ctx.device)
                test(handle)
            except Exception as e:  # noqa: BLE001 - the self-test's failure is its message
                message = exception_text(e)
            finally:
                teardown(ctx, handle)
        results = ctx.group.gather(message)
        if ctx.group.rank == 0:
            failed = [("rank %d: %s" % (r, msg)) if len(results) > 1 else msg for r, msg in enumerate(results) if msg]
            emit("SELFTEST_JSON", dict(run_index=run["index"], config_position=i, provided=provided, m=m,
                                       passed=not failed, message="; ".join(failed), seconds=time.time() - t0))


def teardown(ctx, handle):
    fn = getattr(ctx.impl, "teardown", None)
    if handle is not None and callable(fn):
        fn(handle)


# ---- one run --------------------------------------------------------------------------------------------------------

def _per_rank(ctx, values):
    """A per-rank list (one-process) or this rank's value."""
    return values if ctx.placement == "all" else values[0]


def _as_list(ctx, x):
    return list(x) if ctx.placement == "all" else [x]


def call_once(ctx, handle, args):
    """The untimed call whose tensors are dumped: (outputs, partials or None), per rank held here, copied."""
    with_partials = getattr(ctx.impl, "call_with_partials", None)
    if callable(with_partials):
        out, part = with_partials(handle, *args)
    else:
        out, part = ctx.impl.call(handle, *args), None
    outs = [copy_tensor(ctx, o) for o in _as_list(ctx, out)]
    parts = None if part is None else [copy_tensor(ctx, p) for p in _as_list(ctx, part)]
    return outs, parts


def copy_tensor(ctx, x):
    return x.clone() if ctx.torch is not None else x.copy()


def time_graph(torch, fn, warmup, iters):
    """mori's bench_gemm_ar.py @d54433365ce8 _median_us: warm-up calls on a side stream, one call captured in a CUDA
    graph, warm-up replays, then each timed replay between two events; the median in us. Returns (us, the graph's
    outputs: the last replay's)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = fn()
    torch.cuda.synchronize()
    return time_eager(torch, graph.replay, warmup, iters), result


def time_eager(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(samples)


def timed(ctx, handle, args):
    """(median us or None, "graph"|"eager"|why none, the timed outputs per rank or None)."""
    if ctx.torch is None:
        return None, "none (numpy on the CPU: no device times)", None
    torch, plan = ctx.torch, ctx.plan

    def fn():
        return ctx.impl.call(handle, *args)
    ctx.group.barrier()
    if getattr(ctx.impl, "graph", True) and not plan.get("eager", False):
        try:
            us, result = time_graph(torch, fn, plan["warmup"], plan["iterations"])
            return us, "graph", _as_list(ctx, result)
        except Exception as e:  # noqa: BLE001 - a call that cannot be captured is timed eagerly, and says so
            print("gemmar_runner: graph capture failed (%s); timing eagerly" % exception_text(e), file=sys.stderr)
    us = time_eager(torch, fn, plan["warmup"], plan["iterations"])
    return us, "eager", _as_list(ctx, fn())


def replay_mismatches(ctx, outs, timed_outs):
    """Per rank held here: elements whose bits differ between the dumped call and the last timed replay (the
    same inputs: NONDETERMINISTIC when any)."""
    if timed_outs is None:
        return [0] * len(outs)
    torch = ctx.torch
    return [int(torch.ne(a.contiguous().view(torch.int16), b.contiguous().view(torch.int16)).sum().item())
            for a, b in zip(outs, timed_outs)]


def dump_rank(ctx, run, rank, operands, out, part):
    config, torch = run["config"], ctx.torch
    a, sa, b, sb = operands
    sa, sb = dump_scales(config["quant"], sa, sb, torch)
    if torch is None:  # numpy bf16 travels as its bits
        out = gemmar_dump.Raw("BF16", out.shape, bf16_ready(out))
        part = None if part is None else gemmar_dump.Raw("BF16", part.shape, bf16_ready(part))
    # The config's fields as the dump's metadata, each under its key in common/config_fields.cpp's table
    # (gemmar_dump.CONFIG mirrors it and writes them as the table does): gemmar verify reads them back through the
    # same table, so the dump names the run the plan asked for.
    meta = {key: config[key] for key in gemmar_dump.CONFIG if key in config}
    gemmar_dump.dump(run["dump"].rstrip("/") + "/", rank, ctx.world, a, b, sa, sb, out, partial=part,
                     fp8_format="e4m3fn", m=run["m"], producer="gemmar_runner.py", impl=ctx.name,
                     device=ctx.device_text(), seed=ctx.seed, gemm_impl=ctx.name, **meta)


def bf16_ready(x):
    np = _np()
    return np.ascontiguousarray(x if x.dtype == np.uint16 else bf16_bits(x)).tobytes()


def execute(ctx, run, handle):
    """Operands, the dumped call, the timed replays and the dump of one run; what rank 0's record needs."""
    config, m = run["config"], run["m"]
    ops = ctx.operands(config["quant"], m)
    cols = [_per_rank(ctx, [o[i] for o in ops]) for i in range(4)]
    prepare = getattr(ctx.impl, "prepare", None)
    args = tuple(prepare(handle, *cols)) if callable(prepare) else tuple(cols)
    outs, parts = call_once(ctx, handle, args)
    us, timing, timed_outs = timed(ctx, handle, args)
    mismatches = replay_mismatches(ctx, outs, timed_outs)
    if ctx.torch is not None:
        ctx.torch.cuda.synchronize()
    for i, r in enumerate(ctx.ranks):
        dump_rank(ctx, run, r, ops[i], outs[i], None if parts is None else parts[i])
    extra_fn = getattr(ctx.impl, "record_fields", None)
    extra = dict(extra_fn(handle)) if callable(extra_fn) else {}
    return dict(us=us, timing=timing, mismatches=mismatches, partials=parts is not None, extra=extra)


def result_record(ctx, run, parts, seconds):
    """Rank 0's RESULT_JSON from every rank's part ({us, timing, mismatches, partials, extra})."""
    config, first = run["config"], parts[0]
    # The config's fields, but "chunks": in a RESULT_JSON it is the count the op resolved (bench_gemm_ar.py
    # @d54433365ce8 `"chunks": chunks if fused else None`), which only the implementation knows (record_fields).
    rec = {key: value for key, value in config.items() if key != "chunks"}
    rec["chunks"] = None
    rec.update(first["extra"])
    rec.update(world_size=ctx.world, m=run["m"], n=ctx.n, k=ctx.k, timing=first["timing"], impl=ctx.name,
               placement=ctx.placement, array=ctx.array, seed=ctx.seed, run_index=run["index"], dump=run["dump"],
               device=ctx.device_text(),
               warmup=ctx.plan["warmup"], iterations=ctx.plan["iterations"], seconds=seconds,
               partials_dumped=all(p["partials"] for p in parts))
    mism = [x for p in parts for x in p["mismatches"]]
    rec["replay_mismatch_elements"] = mism
    if first["us"] is not None:
        if ctx.placement == "one":
            per_rank = [p["us"] for p in parts]
            rec["per_rank_time_us"] = per_rank
            rec["critical_rank"] = max(range(len(per_rank)), key=lambda r: per_rank[r])
            rec["max_rank_time_us"] = max(per_rank)
        else:  # every rank in one call: one time for the whole op
            rec["max_rank_time_us"] = first["us"]
    return rec


def run_one(ctx, run, m_max):
    if ctx.group.rank == 0:
        emit("RUN_START", dict(run_index=run["index"]))
    t0, handle = time.time(), None
    try:
        rank = None if ctx.placement == "all" else ctx.group.rank
        handle = ctx.impl.setup(run["config"], ctx.shape(run["m"], m_max), rank, ctx.device)
        part = execute(ctx, run, handle)
    finally:
        teardown(ctx, handle)
    parts = ctx.group.gather(part)
    if ctx.group.rank == 0:
        emit("RESULT_JSON", result_record(ctx, run, parts, time.time() - t0))


def run_all(ctx):
    runs = ctx.plan["runs"]
    m_max = max(r["m"] for r in runs)
    failed = False
    for run in runs:
        try:
            run_one(ctx, run, m_max)
        except GroupAborted:
            raise
        except Exception as e:  # noqa: BLE001 - a failing run is reported and judged; the others go on
            failed = True
            text = exception_text(e)
            emit("RUN_FAILED", dict(run_index=run["index"], rank=ctx.group.rank, error=text,
                                    queue_creation=QUEUE_FAILURE in text, traceback=traceback.format_exc()[-4000:]))
            if ctx.placement == "one":  # the other ranks may wait for this one: end the group
                ctx.group.abort()
                return EXIT_RUN_FAILED
        if ctx.torch is not None:
            ctx.torch.cuda.empty_cache()
    return EXIT_RUN_FAILED if failed else 0


# ---- entry --------------------------------------------------------------------------------------------------------

def main(argv):
    if len(argv) != 3 or argv[1] not in ("describe", "selftest", "run"):
        print("usage: gemmar_runner.py describe|selftest|run PLAN.json", file=sys.stderr)
        return EXIT_USAGE
    try:
        with open(argv[2]) as f:
            plan = json.load(f)
        if argv[1] == "describe":
            describe(plan)
            return 0
        ctx = Context(plan)
        try:
            if argv[1] == "selftest":
                selftest(ctx)
                return 0
            return run_all(ctx)
        finally:
            with contextlib.suppress(Exception):
                ctx.close()
    except RunnerError as e:
        emit("RUNNER_ERROR", {"exit": e.code, "message": str(e)})
        print("gemmar_runner: " + str(e), file=sys.stderr)
        return e.code
    except GroupAborted as e:
        print("gemmar_runner: " + str(e), file=sys.stderr)
        return EXIT_RUN_FAILED
    except (OSError, ValueError, KeyError) as e:
        emit("RUNNER_ERROR", {"exit": EXIT_USAGE, "message": "plan %s: %s" % (argv[2], exception_text(e))})
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv))

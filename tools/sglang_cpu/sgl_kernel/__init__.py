"""Stand-in for the CPU build of sgl-kernel, so the real SGLang CPU engine imports and serves.

Not the real package. With SGLANG_USE_CPU_ENGINE=1, SGLang 0.5.23 imports `*_cpu` kernels
from `sgl_kernel` at module import time; that CPU build is not on PyPI (the `sglang-kernel`
wheel ships CUDA objects only) and needs AVX-512/AMX anyway. Without AMX, SGLang sends every
layer of a Llama model through torch's `forward_native`, so one kernel is really called while
serving, `assign_req_to_token_pool_cpu`, written here in plain torch. Every other `*_cpu`
name exists (the imports need it) and raises when called. `torch.ops.sgl_kernel` stays empty
so `cpu_has_amx_support()` stays False and SGLang keeps to the native paths.
"""

__version__ = "0.0.0+tuiapp-cpu-shim"
SHIM = True


def _not_here(name):
    def kernel(*_args, **_kwargs):
        raise NotImplementedError(f"sgl_kernel.{name}: not in tuiapp's CPU shim of sgl-kernel")

    kernel.__name__ = name
    return kernel


def assign_req_to_token_pool_cpu(req_pool_indices, req_to_token, start_offset, end_offset,
                                 out_cache_loc, pool_len):
    # Same semantics as SGLang's Triton `assign_req_to_token_pool`: row i of the batch gets the
    # next end[i]-start[i] KV slots of out_cache_loc, which holds them packed in batch order.
    taken = 0
    for row, start, end in zip(req_pool_indices.tolist(), start_offset.tolist(), end_offset.tolist()):
        n = end - start
        if n > 0:
            req_to_token[row, start:end] = out_cache_loc[taken:taken + n].to(req_to_token.dtype)
        taken += n


def __getattr__(name):
    # SGLang imports more `*_cpu` kernels under `if _is_cpu:` (KV moves, speculative decoding);
    # anything else stays an AttributeError so `try: from sgl_kernel import X` fallbacks work.
    if name.endswith("_cpu") and not name.startswith("__"):
        globals()[name] = kernel = _not_here(name)
        return kernel
    raise AttributeError(f"module 'sgl_kernel' (tuiapp CPU shim) has no attribute {name!r}")

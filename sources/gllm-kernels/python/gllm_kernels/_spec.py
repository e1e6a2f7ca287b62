"""Single source of truth for kernel names, entry points, arches and launch shapes.

Used by the loader (which entry to call), by tests/test_compile.py (which
``extern "C"`` names must appear in every compiled artifact) and by build
scripts. Keep in sync with the headers of kernels/*/*.{cu,hip,metal}.
"""

# kernel -> its entry points (identical names in CUDA, HIP and Metal).
ENTRY_POINTS = {
    "flash_attn": (
        "flash_attn_fwd_f16_d64",
        "flash_attn_fwd_f16_d128",
        "flash_attn_fwd_f32_d64",
        "flash_attn_fwd_f32_d128",
    ),
    "rms_norm": ("rms_norm_f16", "rms_norm_f32"),
    "rotary": ("rotary_f16", "rotary_f32"),
}
KERNELS = tuple(ENTRY_POINTS)

# backend -> (source folder relative to the package root, source suffix, artifact suffix)
BACKENDS = {
    "cuda": ("kernels/cuda", ".cu", ".ptx"),
    "rocm": ("kernels/rocm", ".hip", ".hsaco"),
    "metal": ("kernels/metal", ".metal", ".metallib"),
}

# Arches users ship to (see the multi-platform build guide). No kernel needs
# more than sm_75 / any RDNA2 target / Apple7 (M1).
CUDA_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90")
ROCM_ARCHS = ("gfx1030", "gfx1031", "gfx1100", "gfx1101", "gfx1102")
METAL_ARCHS = ("apple-m1", "apple-m2", "apple-m3")

# Launch shapes baked into the kernels (see each source's "Launch:" comment).
FLASH_BLOCK_M = 16  # query rows per block
FLASH_THREADS = 128  # threads per block (4 warps)
FLASH_HEAD_DIMS = (64, 128)
ROTARY_THREADS = 256


def entry_name(kernel, dtype_tag, head_dim=None):
    """Entry point for a kernel and dtype tag ('f16'/'f32')."""
    if kernel == "flash_attn":
        return f"flash_attn_fwd_{dtype_tag}_d{head_dim}"
    return f"{kernel}_{dtype_tag}"

"""CUDA driver side: load artifacts with cupy, adapt torch/cupy arrays, launch.

Nothing here is imported until a kernel is called, so ``import gllm_kernels``
works on machines with no GPU and no cupy.
"""

from .artifacts import ArtifactNotFoundError, select_cuda_artifact

_modules = {}  # (kernel, device_id) -> (cupy.RawModule, Artifact)


def _cupy():
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "gllm_kernels needs cupy to load and launch CUDA kernels "
            "(pip install cupy-cuda12x, or the wheel matching your CUDA)") from e
    return cupy


def compute_capability(device_id):
    """Compute capability of a CUDA device as an int, e.g. 86 or 90."""
    cp = _cupy()
    return int(cp.cuda.Device(device_id).compute_capability)


def load_function(kernel, entry, device_id):
    """The entry point ``entry`` of ``kernel`` loaded on ``device_id`` (cached)."""
    cp = _cupy()
    key = (kernel, device_id)
    if key not in _modules:
        with cp.cuda.Device(device_id):
            cc = compute_capability(device_id)
            art = select_cuda_artifact(kernel, cc)  # raises ArtifactNotFoundError
            try:
                mod = cp.RawModule(path=str(art.path))
                mod.get_function(entry)  # forces the load (and the PTX JIT) now
            except Exception as e:
                hint = ""
                if "PTX" in str(e).upper() or "UNSUPPORTED" in str(e).upper():
                    hint = (" The PTX was probably produced by a newer nvcc than this "
                            "driver supports: update the driver, or ship a sm_XY.cubin.")
                raise RuntimeError(f"could not load {art.path} on device {device_id} "
                                   f"(sm_{cc}): {e}.{hint}") from e
        _modules[key] = (mod, art)
    return _modules[key][0].get_function(entry)


def loaded_artifact(kernel, device_id):
    """The Artifact that ``kernel`` was loaded from on ``device_id``, or None."""
    hit = _modules.get((kernel, device_id))
    return hit[1] if hit else None


def _torch_stream(cp, ts, device_id):
    """A cupy stream object for the torch stream ``ts``. Newer cupy wants
    Stream.from_external (the __cuda_stream__ protocol, which recent torch
    streams implement) and deprecates ExternalStream; older cupy only has the latter."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None and hasattr(ts, "__cuda_stream__"):
        try:
            return from_external(ts)
        except Exception:  # protocol mismatch between versions: use the old way
            pass
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cp.cuda.ExternalStream(ts.cuda_stream, device_id)


class Arrays:
    """Adapts the caller's arrays (torch CUDA tensors or cupy arrays) to cupy
    views sharing memory, allocates outputs of the same kind, and picks the
    stream the caller's framework would use (torch's current stream for torch,
    cupy's current stream for cupy) so ordering with surrounding work holds."""

    def __init__(self, first):
        self.cp = _cupy()
        self.is_torch = type(first).__module__.split(".")[0] == "torch"
        if self.is_torch:
            import torch
            if not first.is_cuda:
                raise TypeError("gllm_kernels needs CUDA tensors, got a CPU tensor")
            self.torch = torch
            self.device_id = first.device.index if first.device.index is not None \
                else torch.cuda.current_device()
        elif isinstance(first, self.cp.ndarray):
            self.device_id = first.device.id
        else:
            raise TypeError(f"expected a torch CUDA tensor or a cupy array, got {type(first)}")

    def view(self, x, name, dtype=None):
        """Contiguous cupy view of x (copying only if x is not contiguous)."""
        cp = self.cp
        if self.is_torch:
            t = self.torch
            if not isinstance(x, t.Tensor) or not x.is_cuda:
                raise TypeError(f"{name} must be a CUDA tensor like the first argument")
            if x.device.index != self.device_id:
                raise ValueError(f"{name} is on {x.device}, expected cuda:{self.device_id}")
            x = x.detach()
            if dtype is not None:
                x = x.to(dtype=getattr(t, dtype))
            return cp.asarray(x.contiguous())
        if not isinstance(x, cp.ndarray):
            raise TypeError(f"{name} must be a cupy array like the first argument")
        if x.device.id != self.device_id:
            raise ValueError(f"{name} is on device {x.device.id}, expected {self.device_id}")
        with cp.cuda.Device(self.device_id):
            return cp.ascontiguousarray(x if dtype is None else x.astype(dtype))

    def empty(self, shape, like):
        """New output array (and its cupy view) with like's dtype."""
        if self.is_torch:
            dt = {"float16": self.torch.float16, "float32": self.torch.float32}[like.dtype.name]
            out = self.torch.empty(shape, dtype=dt, device=f"cuda:{self.device_id}")
            return out, self.cp.asarray(out)
        with self.cp.cuda.Device(self.device_id):
            out = self.cp.empty(shape, dtype=like.dtype)
        return out, out

    def launch(self, kernel, entry, grid, block, args):
        cp = self.cp
        fn = load_function(kernel, entry, self.device_id)
        with cp.cuda.Device(self.device_id):
            if self.is_torch:
                stream = _torch_stream(cp, self.torch.cuda.current_stream(self.device_id),
                                       self.device_id)
            else:
                stream = cp.cuda.get_current_stream()
            with stream:
                fn(tuple(grid), tuple(block), tuple(args))


__all__ = ["Arrays", "ArtifactNotFoundError", "compute_capability", "load_function",
           "loaded_artifact"]

"""Accuracy tests for every libamm algorithm against torch's A @ B.

Run against an installed tree:
    PYTHONPATH=<prefix>/python python -m pytest tests/python -q
or the build tree (PYTHONPATH=<build>/python).

Bounds are algorithm-appropriate:
  * sampling / random sketches (crs, importance, count_sketch,
    random_projection): the classic AMM guarantee
    E||C - AB||_F <= c ||A||_F ||B||_F / sqrt(k), checked as a relative error
    normalised by ||AB||_F, averaged over seeds;
  * deterministic / low-rank methods (cooccurring_fd, block_lra): exact on
    exactly low-rank inputs, small on decaying spectra;
  * pq: exact when K >= m or on clustered rows, bounded otherwise.
For all non-exact methods the mean error must fall as the size knob grows.
"""

import math

import pytest
import torch

import libamm

ALGORITHMS = [
    "exact", "crs", "importance", "count_sketch", "random_projection",
    "cooccurring_fd", "block_lra", "pq",
]
RANDOMIZED = ["crs", "importance", "count_sketch", "random_projection"]
SEEDS = [0, 1, 2, 3]


# ----------------------------------------------------------------- inputs
def gaussian(m=96, n=1024, p=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, n, generator=g), torch.randn(n, p, generator=g)


def spectrum(m, n, s, seed):
    """m x n matrix with singular values s (random orthogonal factors)."""
    g = torch.Generator().manual_seed(seed)
    r = s.numel()
    U, _ = torch.linalg.qr(torch.randn(m, r, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(n, r, generator=g, dtype=torch.float64))
    return ((U * s.double()) @ V.T).float()


def decaying(m=96, n=1024, p=64, seed=0):
    """Power-law spectrum s_i = 1/(i+1); B shares A's row space (a Gram-like
    product), the regime where AMM is meant to be used."""
    s = 1.0 / torch.arange(1, 65, dtype=torch.float64)
    A = spectrum(m, n, s, seed)
    g = torch.Generator().manual_seed(seed + 100)
    B = A.T @ torch.randn(m, p, generator=g) / math.sqrt(m)
    return A, B


def low_rank(m=96, n=1024, p=64, r=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(m, r, generator=g) @ torch.randn(r, n, generator=g)
    B = torch.randn(n, r, generator=g) @ torch.randn(r, p, generator=g)
    return A, B


INPUTS = {"gaussian": gaussian, "decaying": decaying, "low_rank": low_rank}


def rel_err(C, A, B):
    exact = (A.double() @ B.double())
    return ((C.double() - exact).norm() / exact.norm()).item()


def mean_err(algo, A, B, k, seeds=SEEDS, **knobs):
    return sum(rel_err(libamm.amm(A, B, algo, sketch_size=k, seed=s, **knobs), A, B)
               for s in seeds) / len(seeds)


def amm_scale(A, B):
    """||A||_F ||B||_F / ||AB||_F: the factor in the standard AMM bound."""
    return (A.norm() * B.norm() / (A @ B).norm()).item()


@pytest.fixture(autouse=True)
def _one_thread():
    # Deterministic timings / no oversubscription on small CI machines.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ------------------------------------------------------------ registry / API
def test_registry_lists_all_algorithms():
    assert sorted(libamm.list()) == sorted(ALGORITHMS)
    for name in ALGORITHMS:
        algo = libamm.create(name)
        assert algo.name == name and algo.description
    assert libamm.create("weighted_cr").name == "importance"
    with pytest.raises(ValueError):
        libamm.create("no_such_algorithm")


def test_bad_inputs_rejected():
    A, B = gaussian(8, 16, 4)
    with pytest.raises(RuntimeError, match="unknown knob"):
        libamm.amm(A, B, "crs", no_such_knob=1)
    with pytest.raises(RuntimeError):
        libamm.amm(A, A, "crs")                          # inner dims differ
    with pytest.raises(RuntimeError):
        libamm.amm(A.int(), B.int(), "exact")            # integer dtype
    with pytest.raises(RuntimeError):
        libamm.amm(A, B, "crs", sketch_size=0)


def test_params_object_path():
    A, B = gaussian(16, 64, 8)
    p = libamm.AmmParams()
    p.sketch_size, p.seed, p.knobs = 32, 5, {"uniform": 1.0}
    C1 = libamm.create("crs").amm(A, B, p)
    C2 = libamm.amm(A, B, "crs", sketch_size=32, seed=5, uniform=1)
    assert torch.equal(C1, C2)


# ------------------------------------------------------------------- exact
@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_exact_equals_matmul(kind):
    A, B = INPUTS[kind]()
    assert torch.equal(libamm.amm(A, B, "exact"), A @ B)
    A64, B64 = A.double(), B.double()
    C = libamm.amm(A64, B64, "exact")
    assert C.dtype == torch.float64 and torch.equal(C, A64 @ B64)


# ------------------------------------------------------- shape / dtype / seed
@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_shape_dtype_and_reproducibility(algo, dtype):
    A, B = gaussian(40, 130, 24, seed=3)
    A, B = A.to(dtype), B.to(dtype)
    C1 = libamm.amm(A, B, algo, sketch_size=16, seed=11)
    C2 = libamm.amm(A, B, algo, sketch_size=16, seed=11)
    assert C1.shape == (40, 24) and C1.dtype == dtype
    assert torch.isfinite(C1).all()
    assert torch.equal(C1, C2), "same seed must give the same result"
    if algo in RANDOMIZED:
        assert not torch.equal(C1, libamm.amm(A, B, algo, sketch_size=16, seed=12))


# ------------------------------------------- sampling and random sketches
@pytest.mark.parametrize("algo", RANDOMIZED)
@pytest.mark.parametrize("kind", ["gaussian", "decaying"])
@pytest.mark.parametrize("k", [64, 256])
def test_randomized_within_amm_bound(algo, kind, k):
    A, B = INPUTS[kind]()
    # E||C-AB||_F^2 <= 2 ||A||^2 ||B||^2 / k covers all four methods; 1.5x slack
    # on the root of the seed-averaged estimate.
    bound = 1.5 * math.sqrt(2.0) * amm_scale(A, B) / math.sqrt(k)
    err = mean_err(algo, A, B, k)
    assert err < bound, f"{algo} on {kind}: {err:.3f} >= {bound:.3f}"


@pytest.mark.parametrize("algo", ["crs", "importance"])
def test_sampling_exact_when_mass_is_in_few_pairs(algo):
    # Only 8 inner indices carry mass: importance sampling with k >= 8 keeps
    # them all with q = 1 (exact); CRS samples only among them.
    A, B = gaussian(32, 256, 16, seed=4)
    mask = torch.zeros(256)
    mask[::32] = 1
    A = A * mask
    err = mean_err(algo, A, B, 64)
    if algo == "importance":
        assert err < 1e-5
    else:
        assert err < 0.5


def test_crs_norm_probabilities_beat_uniform():
    # Skewed column norms: optimal probabilities must win over uniform.
    A, B = gaussian(64, 1024, 32, seed=5)
    w = torch.linspace(0.01, 3.0, 1024) ** 3
    A, B = A * w, B * w[:, None]
    assert mean_err("crs", A, B, 128) < 0.8 * mean_err("crs", A, B, 128, uniform=1)


def test_random_projection_rademacher():
    A, B = decaying()
    assert mean_err("random_projection", A, B, 256, rademacher=1) < \
        1.5 * math.sqrt(2.0) * amm_scale(A, B) / 16


# ------------------------------------------------ deterministic / low-rank
def test_cooccurring_fd_exact_on_low_rank():
    A, B = low_rank(r=6)
    assert rel_err(libamm.amm(A, B, "cooccurring_fd", sketch_size=16), A, B) < 1e-4


def test_cooccurring_fd_spectral_bound():
    for kind in ("gaussian", "decaying"):
        A, B = INPUTS[kind]()
        for l in (8, 32, 64):
            C = libamm.amm(A, B, "cooccurring_fd", sketch_size=l)
            spec = torch.linalg.matrix_norm((C - A @ B).double(), 2).item()
            assert spec <= 2 * (A.norm() * B.norm()).item() / l * 1.001


def test_cooccurring_fd_decaying_spectrum_accurate():
    A, B = decaying()
    assert rel_err(libamm.amm(A, B, "cooccurring_fd", sketch_size=64), A, B) < 0.1


@pytest.mark.parametrize("blocks", [(0, 0), (128, 128), (32, 256)])
def test_block_lra_exact_on_low_rank(blocks):
    A, B = low_rank(r=6)
    C = libamm.amm(A, B, "block_lra", sketch_size=6,
                   block_rows=blocks[0], block_inner=blocks[1])
    assert rel_err(C, A, B) < 1e-4


def test_block_lra_decaying_spectrum():
    A, B = decaying()
    assert mean_err("block_lra", A, B, 32, block_rows=0, block_inner=0) < 0.05


# --------------------------------------------------------------------- pq
def test_pq_exact_when_codebook_covers_rows():
    A, B = gaussian(20, 33, 7, seed=6)  # 33 % 4 != 0 exercises padding
    assert rel_err(libamm.amm(A, B, "pq", sketch_size=20), A, B) < 1e-5


def test_pq_clustered_rows():
    g = torch.Generator().manual_seed(7)
    protos = torch.randn(8, 64, generator=g)
    A = protos[torch.randint(8, (256,), generator=g)] + 1e-3 * torch.randn(256, 64, generator=g)
    B = torch.randn(64, 32, generator=g)
    assert min(rel_err(libamm.amm(A, B, "pq", sketch_size=8, seed=s), A, B)
               for s in SEEDS) < 1e-2


@pytest.mark.parametrize("kind", ["gaussian", "decaying"])
def test_pq_bounded(kind):
    A, B = INPUTS[kind](m=256, n=128, p=32)
    assert mean_err("pq", A, B, 32, seeds=SEEDS[:2]) < 0.75


# ------------------------------------------- error falls with sketch size
SIZES = {
    "crs": [16, 64, 256],
    "importance": [16, 64, 256],
    "count_sketch": [16, 64, 256],
    "random_projection": [16, 64, 256],
    "cooccurring_fd": [8, 32, 128],
    "block_lra": [4, 16, 64],
    "pq": [4, 16, 64],
}


@pytest.mark.parametrize("algo", sorted(SIZES))
@pytest.mark.parametrize("kind", ["gaussian", "decaying"])
def test_error_decreases_with_sketch_size(algo, kind):
    if algo == "pq":
        A, B = INPUTS[kind](m=256, n=128, p=32)
    else:
        A, B = INPUTS[kind]()
    errs = [mean_err(algo, A, B, k) for k in SIZES[algo]]
    assert all(e1 < e0 for e0, e1 in zip(errs, errs[1:])), f"{algo} {kind}: {errs}"
    # A 16x larger sketch should buy a clear improvement, not noise.
    assert errs[-1] < 0.75 * errs[0], f"{algo} {kind}: {errs}"

"""pytest options for the dashinfer tests.

--platform cpu|cuda|all   platform(s) the `platform`-parametrised tests run on
                          (repeatable; default cpu). CUDA tests skip with a
                          visible reason when the build has no CUDA or the
                          machine has no GPU.
"""
import pytest


def pytest_addoption(parser):
    parser.addoption("--platform", action="append", choices=["cpu", "cuda", "all"],
                     help="platform(s) to run engine tests on (default: cpu)")


def selected_platforms(config):
    chosen = config.getoption("platform") or ["cpu"]
    return ["cpu", "cuda"] if "all" in chosen else sorted(set(chosen), key=chosen.index)


def pytest_generate_tests(metafunc):
    if "platform" in metafunc.fixturenames:
        metafunc.parametrize("platform", selected_platforms(metafunc.config))


@pytest.fixture
def require_platform(platform):
    """Skips (visibly) when `platform` cannot run here; returns it otherwise."""
    import dashinfer
    if platform == "cuda":
        if not dashinfer.cuda_compiled():
            pytest.skip("cuda: dashinfer built with DASHINFER_ENABLE_CUDA=OFF")
        if dashinfer.cuda_device_count() == 0:
            pytest.skip("cuda: no CUDA device on this machine")
    return platform

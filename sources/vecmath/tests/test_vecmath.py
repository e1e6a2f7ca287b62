import math
import os
from array import array

import pytest

import vecmath


def test_dot_and_norm():
    a = array("d", [float(i) for i in range(1, 12)])
    b = array("d", [0.5] * 11)
    assert vecmath.dot(a, b) == pytest.approx(0.5 * sum(range(1, 12)))
    assert vecmath.norm2(a) == pytest.approx(math.sqrt(sum(i * i for i in range(1, 12))))


def test_axpy_in_place():
    x, y = array("d", [1, 2, 3]), array("d", [10, 20, 30])
    vecmath.axpy(2.0, x, y)
    assert list(y) == [12, 24, 36]


def test_errors():
    with pytest.raises(ValueError, match="length mismatch"):
        vecmath.dot(array("d", [1]), array("d", [1, 2]))
    with pytest.raises(TypeError, match="doubles"):
        vecmath.dot(array("i", [1]), array("i", [1]))


def test_built_as_asked():
    assert vecmath.__version__ == "0.1.0"
    assert vecmath.unrolled() is (os.environ.get("EXPECT_UNROLL", "ON") == "ON")

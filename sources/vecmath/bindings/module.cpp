// The Python side, on the C API and the buffer protocol (no binding library needed).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "vecmath.h"

namespace {

struct Doubles {
  Py_buffer view{};
  bool ok = false;
  Doubles(PyObject* obj, int flags) {
    ok = PyObject_GetBuffer(obj, &view, flags | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0;
    if (ok && (view.itemsize != sizeof(double) || !view.format || view.format[0] != 'd')) {
      PyErr_SetString(PyExc_TypeError, "expected a contiguous buffer of doubles ('d')");
      PyBuffer_Release(&view);
      ok = false;
    }
  }
  ~Doubles() { if (ok) PyBuffer_Release(&view); }
  const double* data() const { return static_cast<const double*>(view.buf); }
  std::size_t size() const { return static_cast<std::size_t>(view.len) / sizeof(double); }
};

PyObject* dot(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO", &a, &b)) return nullptr;
  Doubles x(a, PyBUF_SIMPLE), y(b, PyBUF_SIMPLE);
  if (!x.ok || !y.ok) return nullptr;
  if (x.size() != y.size()) {
    PyErr_Format(PyExc_ValueError, "length mismatch: %zu and %zu", x.size(), y.size());
    return nullptr;
  }
  return PyFloat_FromDouble(vecmath::dot(x.data(), y.data(), x.size()));
}

PyObject* norm2(PyObject*, PyObject* args) {
  PyObject* a;
  if (!PyArg_ParseTuple(args, "O", &a)) return nullptr;
  Doubles x(a, PyBUF_SIMPLE);
  if (!x.ok) return nullptr;
  return PyFloat_FromDouble(vecmath::norm2(x.data(), x.size()));
}

PyObject* axpy(PyObject*, PyObject* args) {
  double alpha;
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "dOO", &alpha, &a, &b)) return nullptr;
  Doubles x(a, PyBUF_SIMPLE), y(b, PyBUF_WRITABLE);
  if (!x.ok || !y.ok) return nullptr;
  if (x.size() != y.size()) {
    PyErr_SetString(PyExc_ValueError, "length mismatch");
    return nullptr;
  }
  vecmath::axpy(alpha, x.data(), const_cast<double*>(y.data()), x.size());
  Py_RETURN_NONE;
}

PyObject* unrolled(PyObject*, PyObject*) { return PyBool_FromLong(vecmath::unrolled()); }

PyMethodDef methods[] = {
    {"dot", dot, METH_VARARGS, "dot(a, b): sum of a[i] * b[i]"},
    {"norm2", norm2, METH_VARARGS, "norm2(a): Euclidean norm"},
    {"axpy", axpy, METH_VARARGS, "axpy(alpha, x, y): y += alpha * x, in place"},
    {"unrolled", unrolled, METH_NOARGS, "built with VECMATH_UNROLL"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_vecmath", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__vecmath() {
  PyObject* m = PyModule_Create(&module);
  if (m) PyModule_AddStringConstant(m, "__version__", VECMATH_VERSION);
  return m;
}

/*
 * What both compiled kernels (_regressor_kernel.c, _online_kernel.c) share: taking a float64 or an index
 * buffer, checking indices, checking values against bounds while reordering them (the one-point feed-forward), and the columns
 * of the friction models that are a sign and the velocity, as numpy computes them.
 * Included once by each; setup.py and CMakeLists.txt list it as their dependency.
 */
#ifndef ROBOT_DYNID_KERNEL_COMMON_H
#define ROBOT_DYNID_KERNEL_COMMON_H
#include <Python.h>
#include <math.h>
#include <string.h>

/* A float64 buffer of the given dimension (C-contiguous unless strided), or a ValueError naming it. */
static int get_buffer(PyObject *object, Py_buffer *view, int writable, int ndim, int strided, const char *name)
{
    int flags = (strided ? PyBUF_STRIDES : PyBUF_C_CONTIGUOUS) | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, view, flags) < 0)
        return -1;
    const char *format = view->format;
    if (format[0] == '<' || format[0] == '=' || format[0] == '@')
        format++;
    if (view->itemsize != sizeof(double) || strcmp(format, "d") != 0 || view->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s must be a %s%d-dimensional float64 array", name,
                     strided ? "" : "C-contiguous ", ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* An index buffer (numpy's intp: Py_ssize_t-sized signed integers), 1-dimensional and C-contiguous, or a
 * ValueError naming it. */
static int get_index_buffer(PyObject *object, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *format = view->format;
    if (format[0] == '<' || format[0] == '=' || format[0] == '@')
        format++;
    if (view->itemsize != sizeof(Py_ssize_t) || view->ndim != 1 || format[0] == '\0' || format[1] != '\0'
        || strchr("lqn", format[0]) == NULL) {
        PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous 1-dimensional intp array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* 0 when each of the n indices lies in 0..m-1; else -1 with a ValueError naming the first that does not
 * ("order[1] = 6 is not an index of the 6 joints"). */
static int check_indices(const Py_ssize_t *index, Py_ssize_t n, Py_ssize_t m, const char *name, const char *what)
{
    for (Py_ssize_t j = 0; j < n; j++)
        if (index[j] < 0 || index[j] >= m) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] = %zd is not an index of the %zd %s", name, j, index[j], m, what);
            return -1;
        }
    return 0;
}

/* 1 when each of the length values lies in [lower[i], upper[i]] (NaN nowhere), having written
 * out[j] = value[index[j]] for the n indices (each in 0..m-1); 1 and out all 0 for no values; 0 when one does
 * not, or length is neither m nor 0 (out then partly written). */
static int gather_checked(Py_ssize_t length, const double *value, Py_ssize_t m, const double *lower,
                          const double *upper, const Py_ssize_t *index, Py_ssize_t n, double *out)
{
    if (length == 0) {
        memset(out, 0, (size_t)n * sizeof(double));
        return 1;
    }
    if (length != m)
        return 0;
    for (Py_ssize_t i = 0; i < m; i++)
        if (!(lower[i] <= value[i] && value[i] <= upper[i]))
            return 0;
    for (Py_ssize_t j = 0; j < n; j++)
        out[j] = value[index[j]];
    return 1;
}

/* numpy's sign: 1, -1, +0 for +-0, NaN as it is. */
static inline double sign(double x)
{
    return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x));
}

/* Friction columns [sgn(v + lead a), v] of count velocities v (a NULL: sgn(v)) into out (count, 2),
 * zero where |v| < dead_band * scale[i % rows] (scale NULL: 1). Not contracted into fused multiply-adds:
 * v + lead * a rounded twice, as numpy rounds it (robot_dynid.model.friction, bit for bit). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static void sign_columns(Py_ssize_t count, const double *v, const double *a, double lead, double dead_band,
                         const double *scale, Py_ssize_t rows, double *out)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        const double ahead = a == NULL ? v[i] : v[i] + lead * a[i];
        out[2 * i] = sign(ahead);
        out[2 * i + 1] = v[i];
        if (dead_band > 0.0 && fabs(v[i]) < dead_band * (scale == NULL ? 1.0 : scale[i % rows])) {
            out[2 * i] = 0.0;
            out[2 * i + 1] = 0.0;
        }
    }
}

#endif

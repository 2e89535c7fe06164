/*
 * robot_dynid._online_kernel: the per-sample arithmetic of online identification, compiled so that a
 * step costs microseconds, not the tens of microseconds of numpy calls on arrays of a few dozen values:
 *
 * - rls_update: one recursive least-squares update with forgetting, in place
 *   (robot_dynid.estimation.estimators.RecursiveLeastSquares documents the recursion);
 * - centre_derivative: a derivative at the centre of one window of uniformly stamped samples by
 *   Savitzky-Golay weights (robot_dynid.recordings.signal_processing.centre_derivative);
 * - sign_friction: the columns of the friction models whose columns are a sign and the velocity
 *   (robot_dynid.model.friction, coulomb_viscous and coulomb_viscous_lead), as numpy computes them;
 * - gather_within: values checked against their bounds and put in another joint order (the one-point
 *   feed-forward of robot_dynid.model.feedforward: a request's point in, its torques out).
 *
 * All four take and write float64 buffers (gather_within also an intp index); the Python callers check
 * shapes (these functions check them again, cheaply, and raise ValueError rather than read out of bounds).
 * Every result is a deterministic function of the inputs (fixed summation order), so the checked and the
 * trusted Python calls, which both end here, agree bit for bit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include "_kernel_common.h"

/* How a function takes an array argument. */
typedef struct {
    const char *name;
    int ndim, strided, writable, optional;   /* optional: None allowed (present[i] 0) */
} argument;

static void release_buffers(Py_buffer *views, const int *present, int count)
{
    for (int i = 0; i < count; i++)
        if (present[i])
            PyBuffer_Release(&views[i]);
}

/* The buffers of objects[0..count-1] as arguments describes them, or -1 (an exception set, none held). */
static int get_buffers(PyObject *const *objects, const argument *arguments, int count, Py_buffer *views,
                       int *present)
{
    for (int i = 0; i < count; i++) {
        present[i] = objects[i] != Py_None;
        if (!present[i] && arguments[i].optional)
            continue;
        if (!present[i] || get_buffer(objects[i], &views[i], arguments[i].writable, arguments[i].ndim,
                                      arguments[i].strided, arguments[i].name) < 0) {
            if (!present[i])
                PyErr_Format(PyExc_ValueError, "%s must be an array, got None", arguments[i].name);
            release_buffers(views, present, i);
            return -1;
        }
    }
    return 0;
}

/*
 * The update for rows Phi (m, p), measurements y (m,), noise variances s (m,) (all 1 when s is NULL),
 * forgetting mu, on theta (p,) and the symmetric covariance P (p, p), with A = P Phi^T and the
 * innovation covariance C = mu S + Phi A = L L^T (Cholesky):
 *     B = L^-1 A^T (m, p),   theta += B^T L^-1 (y - Phi theta),   P = (P - B^T B) / mu,
 * which is K = A C^-1, theta += K (y - Phi theta), P = (I - K Phi) P / mu, since A C^-1 A^T = B^T B.
 * P is updated on its upper triangle and mirrored, so it stays exactly symmetric.
 * work holds 2 m p + m m + 2 m doubles. Returns 0 and the trace of the new P in *trace, or -1
 * (nothing written) when C is not numerically positive definite (or not finite).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static int update(Py_ssize_t m, Py_ssize_t p, double *theta, double *P, const double *Phi, const double *y,
                  const double *s, double mu, double *work, double *trace)
{
    double *At = work, *B = work + m * p, *L = work + 2 * m * p, *e = L + m * m;
    /* A^T = Phi P (P symmetric), row by row: axpy over contiguous rows of P, zeros of Phi skipped */
    for (Py_ssize_t k = 0; k < m; k++) {
        double *row = At + k * p;
        memset(row, 0, (size_t)p * sizeof(double));
        for (Py_ssize_t j = 0; j < p; j++) {
            const double factor = Phi[k * p + j];
            if (factor == 0.0)
                continue;
            const double *P_j = P + j * p;
            for (Py_ssize_t i = 0; i < p; i++)
                row[i] += factor * P_j[i];
        }
    }
    /* C = mu S + Phi A (lower triangle), factorised in place into L */
    for (Py_ssize_t k = 0; k < m; k++) {
        for (Py_ssize_t l = 0; l <= k; l++) {
            double sum = 0.0;
            for (Py_ssize_t i = 0; i < p; i++)
                sum += Phi[k * p + i] * At[l * p + i];
            L[k * m + l] = sum;
        }
        L[k * m + k] += mu * (s == NULL ? 1.0 : s[k]);
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        for (Py_ssize_t l = 0; l <= k; l++) {
            double sum = L[k * m + l];
            for (Py_ssize_t r = 0; r < l; r++)
                sum -= L[k * m + r] * L[l * m + r];
            if (l < k)
                L[k * m + l] = sum / L[l * m + l];
            else if (sum > 0.0 && isfinite(sum))
                L[k * m + k] = sqrt(sum);
            else
                return -1;
        }
    }
    /* B = L^-1 A^T and w = L^-1 (y - Phi theta), by forward substitution (e holds w) */
    for (Py_ssize_t k = 0; k < m; k++) {
        double *row = B + k * p;
        memcpy(row, At + k * p, (size_t)p * sizeof(double));
        double residual = y[k];
        for (Py_ssize_t i = 0; i < p; i++)
            residual -= Phi[k * p + i] * theta[i];
        for (Py_ssize_t l = 0; l < k; l++) {
            const double factor = L[k * m + l];
            const double *other = B + l * p;
            for (Py_ssize_t i = 0; i < p; i++)
                row[i] -= factor * other[i];
            residual -= factor * e[l];
        }
        const double diagonal = L[k * m + k];
        for (Py_ssize_t i = 0; i < p; i++)
            row[i] /= diagonal;
        e[k] = residual / diagonal;
    }
    /* theta += B^T w */
    for (Py_ssize_t k = 0; k < m; k++) {
        const double factor = e[k];
        const double *row = B + k * p;
        for (Py_ssize_t i = 0; i < p; i++)
            theta[i] += factor * row[i];
    }
    /* P = (P - B^T B) / mu on the upper triangle, mirrored */
    const double inverse = 1.0 / mu;
    double sum = 0.0;
    for (Py_ssize_t i = 0; i < p; i++) {
        double *P_i = P + i * p;
        for (Py_ssize_t k = 0; k < m; k++) {
            const double factor = B[k * p + i];
            if (factor == 0.0)
                continue;
            const double *row = B + k * p;
            for (Py_ssize_t j = i; j < p; j++)
                P_i[j] -= factor * row[j];
        }
        if (mu != 1.0)
            for (Py_ssize_t j = i; j < p; j++)
                P_i[j] *= inverse;
        for (Py_ssize_t j = i + 1; j < p; j++)
            P[j * p + i] = P_i[j];
        sum += P_i[i];
    }
    *trace = sum;
    return 0;
}

PyDoc_STRVAR(rls_update_doc,
"rls_update(theta, covariance, phi, y, noise, forgetting)\n--\n\n"
"One recursive least-squares update in place: theta (p,) and the symmetric covariance (p, p)\n"
"(both writable), rows phi (m, p), measurements y (m,), noise None (variances 1) or the noise\n"
"variances (m,), forgetting in (0, 1]. All arrays float64, C-contiguous. Returns the trace of\n"
"the new covariance, or None, with nothing written, when mu S + phi P phi^T is not numerically\n"
"positive definite (the caller then solves it another way).");

static PyObject *rls_update(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const argument arguments[5] = {{"theta", 1, 0, 1, 0}, {"covariance", 2, 0, 1, 0}, {"phi", 2, 0, 0, 0},
                                          {"y", 1, 0, 0, 0}, {"noise", 1, 0, 0, 1}};
    Py_buffer views[5];
    int present[5];
    PyObject *result = NULL;
    double *work = NULL;
    (void)module;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "rls_update takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    const double mu = PyFloat_AsDouble(args[5]);
    if (mu == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(mu > 0.0 && mu <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "forgetting must be in (0, 1]");
        return NULL;
    }
    if (get_buffers(args, arguments, 5, views, present) < 0)
        return NULL;
    const Py_ssize_t p = views[0].shape[0], m = views[2].shape[0];
    if (views[1].shape[0] != p || views[1].shape[1] != p || views[2].shape[1] != p || views[3].shape[0] != m
        || (present[4] && views[4].shape[0] != m) || m < 1) {
        PyErr_Format(PyExc_ValueError, "rls_update needs theta (p,), covariance (p, p), phi (m, p), y (m,) and "
                     "noise (m,) with m >= 1; got p = %zd, m = %zd", p, m);
        goto done;
    }
    work = PyMem_RawMalloc((size_t)(2 * m * p + m * m + 2 * m) * sizeof(double));
    if (work == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    double trace;
    if (update(m, p, views[0].buf, views[1].buf, views[2].buf, views[3].buf, present[4] ? views[4].buf : NULL, mu,
               work, &trace) < 0) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = PyFloat_FromDouble(trace);
    }
done:
    PyMem_RawFree(work);
    release_buffers(views, present, 5);
    return result;
}

PyDoc_STRVAR(centre_derivative_doc,
"centre_derivative(q, time, weights, tolerance, order, out)\n--\n\n"
"The order-th derivative at the centre of one window: q (w, m) and time (w,) [s] (any strides),\n"
"weights (w,) the Savitzky-Golay weights for a unit step, out (m,) C-contiguous. When every step\n"
"of time is within tolerance times the mean step h of it, writes out = (weights @ q) / h**order\n"
"and returns True; otherwise (or with non-finite stamps) returns False and writes nothing.");

static PyObject *centre_derivative(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const argument arguments[4] = {{"q", 2, 1, 0, 0}, {"time", 1, 1, 0, 0}, {"weights", 1, 0, 0, 0},
                                          {"out", 1, 0, 1, 0}};
    Py_buffer views[4];
    int present[4];
    PyObject *result = NULL;
    (void)module;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "centre_derivative takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    const double tolerance = PyFloat_AsDouble(args[3]);
    if (tolerance == -1.0 && PyErr_Occurred())
        return NULL;
    const long order = PyLong_AsLong(args[4]);
    if (order == -1 && PyErr_Occurred())
        return NULL;
    PyObject *const ordered[4] = {args[0], args[1], args[2], args[5]};
    if (get_buffers(ordered, arguments, 4, views, present) < 0)
        return NULL;
    const Py_ssize_t w = views[0].shape[0], columns = views[0].shape[1];
    if (views[1].shape[0] != w || views[2].shape[0] != w || views[3].shape[0] != columns || w < 2) {
        PyErr_Format(PyExc_ValueError, "centre_derivative needs q (w, m), time (w,), weights (w,) and out (m,) "
                     "with w >= 2; got q (%zd, %zd)", w, columns);
        goto done;
    }
    const char *time = views[1].buf, *q = views[0].buf;
    const Py_ssize_t time_stride = views[1].strides[0], row_stride = views[0].strides[0],
                     column_stride = views[0].strides[1];
#define STAMP(i) (*(const double *)(time + (i) * time_stride))
    const double step = (STAMP(w - 1) - STAMP(0)) / (double)(w - 1);
    int uniform = 1;
    for (Py_ssize_t i = 0; i + 1 < w; i++)
        if (!(fabs(STAMP(i + 1) - STAMP(i) - step) <= tolerance * step))
            uniform = 0;
#undef STAMP
    if (uniform) {
        const double *weights = views[2].buf;
        double *out = views[3].buf;
        const double scale = pow(step, (double)order);
        for (Py_ssize_t j = 0; j < columns; j++) {
            double sum = 0.0;
            for (Py_ssize_t i = 0; i < w; i++)
                sum += weights[i] * *(const double *)(q + i * row_stride + j * column_stride);
            out[j] = sum / scale;
        }
    }
    result = uniform ? Py_True : Py_False;
    Py_INCREF(result);
done:
    release_buffers(views, present, 4);
    return result;
}

PyDoc_STRVAR(sign_friction_doc,
"sign_friction(v, a, lead, dead_band, scale, out)\n--\n\n"
"Friction columns [sgn(v + lead a), v] of velocities v (N, R) into out (N, R, 2), zero where\n"
"|v| < dead_band * scale (scale None: 1, or (R,)); a (N, R) or None (then sgn(v)). The\n"
"arithmetic of robot_dynid.model.friction for coulomb_viscous (a None) and coulomb_viscous_lead,\n"
"bit for bit. All arrays float64, C-contiguous.");

static PyObject *sign_friction(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const argument arguments[4] = {{"v", 2, 0, 0, 0}, {"a", 2, 0, 0, 1}, {"scale", 1, 0, 0, 1},
                                          {"out", 3, 0, 1, 0}};
    Py_buffer views[4];
    int present[4];
    PyObject *result = NULL;
    (void)module;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "sign_friction takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    const double lead = PyFloat_AsDouble(args[2]), dead_band = PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *const ordered[4] = {args[0], args[1], args[4], args[5]};
    if (get_buffers(ordered, arguments, 4, views, present) < 0)
        return NULL;
    const Py_ssize_t n = views[0].shape[0], rows = views[0].shape[1];
    if ((present[1] && (views[1].shape[0] != n || views[1].shape[1] != rows))
        || (present[2] && views[2].shape[0] != rows)
        || views[3].shape[0] != n || views[3].shape[1] != rows || views[3].shape[2] != 2) {
        PyErr_Format(PyExc_ValueError, "sign_friction needs a (%zd, %zd), scale (%zd,) and out (%zd, %zd, 2)",
                     n, rows, rows, n, rows);
        goto done;
    }
    sign_columns(n * rows, views[0].buf, present[1] ? views[1].buf : NULL, lead, dead_band,
                 present[2] ? views[2].buf : NULL, rows, views[3].buf);
    result = Py_None;
    Py_INCREF(result);
done:
    release_buffers(views, present, 4);
    return result;
}

PyDoc_STRVAR(gather_within_doc,
"gather_within(fields, order, bounds, out)\n--\n\n"
"Values checked against their bounds and reordered, for the one-point feed-forward: fields, a tuple\n"
"of k float64 arrays of m values (or none: an empty field) in one joint order; order (n,) intp, the\n"
"index in that order of each joint of the other; bounds (k, 2, m): the lower and upper bound of each\n"
"field's values, in the fields' order; out (k, 1, n), writable. Returns True, with out[f, 0, j] =\n"
"fields[f][order[j]] (0 for an empty field), when every value lies within its bounds (lower <= value\n"
"<= upper: NaN nowhere); False, out partly written, when one does not or a field's length is neither\n"
"m nor 0 (the first field's must be m). Float arrays C-contiguous.");

#define MAX_FIELDS 4

static PyObject *gather_within(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const argument field = {"fields[f]", 1, 0, 0, 0};
    static const argument tables[2] = {{"bounds", 3, 0, 0, 0}, {"out", 3, 0, 1, 0}};
    Py_buffer views[MAX_FIELDS], table_views[2], order;
    int present[MAX_FIELDS], table_present[2];
    PyObject *result = NULL;
    (void)module;

    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "gather_within takes 4 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) < 1 || PyTuple_GET_SIZE(args[0]) > MAX_FIELDS) {
        PyErr_Format(PyExc_TypeError, "fields must be a tuple of 1 to %d arrays", MAX_FIELDS);
        return NULL;
    }
    const int k = (int)PyTuple_GET_SIZE(args[0]);
    for (int f = 0; f < k; f++) {
        PyObject *const item = PyTuple_GET_ITEM(args[0], f);
        if (get_buffers(&item, &field, 1, &views[f], &present[f]) < 0) {
            release_buffers(views, present, f);
            return NULL;
        }
    }
    if (get_buffers(args + 2, tables, 2, table_views, table_present) < 0) {
        release_buffers(views, present, k);
        return NULL;
    }
    if (get_index_buffer(args[1], &order, "order") < 0) {
        release_buffers(table_views, table_present, 2);
        release_buffers(views, present, k);
        return NULL;
    }
    const Py_ssize_t m = table_views[0].shape[2], n = order.shape[0];
    const Py_ssize_t *index = order.buf;
    if (table_views[0].shape[0] != k || table_views[0].shape[1] != 2 || table_views[1].shape[0] != k
        || table_views[1].shape[1] != 1 || table_views[1].shape[2] != n) {
        PyErr_Format(PyExc_ValueError, "gather_within needs bounds (%d, 2, m) and out (%d, 1, %zd)", k, k, n);
        goto done;
    }
    if (check_indices(index, n, m, "order", "values") < 0)
        goto done;
    int within = views[0].shape[0] == m;
    const double *bounds = table_views[0].buf;
    for (int f = 0; f < k && within; f++)
        within = gather_checked(views[f].shape[0], views[f].buf, m, bounds + 2 * f * m, bounds + (2 * f + 1) * m,
                                index, n, (double *)table_views[1].buf + f * n);
    result = PyBool_FromLong(within);
done:
    PyBuffer_Release(&order);
    release_buffers(table_views, table_present, 2);
    release_buffers(views, present, k);
    return result;
}

static PyMethodDef methods[] = {
    {"rls_update", (PyCFunction)(void (*)(void))rls_update, METH_FASTCALL, rls_update_doc},
    {"centre_derivative", (PyCFunction)(void (*)(void))centre_derivative, METH_FASTCALL, centre_derivative_doc},
    {"sign_friction", (PyCFunction)(void (*)(void))sign_friction, METH_FASTCALL, sign_friction_doc},
    {"gather_within", (PyCFunction)(void (*)(void))gather_within, METH_FASTCALL, gather_within_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_online_kernel",
    "The per-sample arithmetic of online identification (see robot_dynid.estimation.estimators.RecursiveLeastSquares "
    "and robot_dynid.recordings.signal_processing.centre_derivative).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__online_kernel(void)
{
    return PyModule_Create(&module_definition);
}

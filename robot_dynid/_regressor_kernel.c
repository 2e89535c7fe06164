/*
 * robot_dynid._regressor_kernel: the joint-torque regressor Y (tau = Y theta) of a serial arm of
 * revolute and prismatic joints, compiled, four samples at a time (GCC/Clang vector extensions: one vector lane
 * per sample, so the arithmetic is the scalar recursion below). robot_dynid/model/regressor.py builds
 * the inputs and documents the parameter order.
 *
 * The chain (regressor._chain_from_model) is, per joint i, two constant frame changes: previous
 * link frame -> joint frame i at q_i = 0 ("to_joint"), then Rz(q_i) (revolute [rad]) or Tz(q_i)
 * (prismatic [m]), then joint frame i -> link frame i ("to_link"). A frame change to B from A is stored as 13 doubles: [identity flag,
 * r (3x3 row-major, v_B = r v_A, the transposed orientation of B in A), p (origin of B in A) [m]].
 *
 * In link frame i, with angular velocity w, angular acceleration dw and origin acceleration a
 * (gravity entering as a = -g at the base), the wrench of link i about its origin is linear in
 * its parameters (m, h = m c, I):
 *     f = m a + (S(dw) + S(w) S(w)) h,     n = I dw + w x (I w) + h x a,
 * and joint j <= i sees tau_j += l . f + u . n, where (l, u) = (r_j x z_j, z_j) is the unit
 * twist of a revolute joint j expressed in link frame i ((z_j, 0) for a prismatic one, whose
 * "torque" is a force [N]). Twists move between frames like motions:
 *     u_B = r u_A,   l_B = r (l_A - p x u_A).
 * A prismatic joint translates by p = q z: a_B = a_A + dw x p + w x (w x p) + 2 w x z qd + z qdd,
 * w and dw unchanged.
 *
 * After the 10 n inertial columns come the drive columns, given as maps from "rows" (joints for
 * joint-side friction and armature, motors for motor-side ones) to joints: friction row r's
 * coefficient c enters joint j as F[r, j] phi[k, r, c] (phi the friction columns of row r's
 * velocity), armature row r enters joint j as A[r, j] (A[r, :] . qdd) (a rotor inertia times the
 * row's acceleration, mapped to the joints: tau = T^T tau_m for motors, T the transmission).
 *
 * Memory: the four samples' rows of Y are assembled in an L1-resident tile (zeroed once: only
 * the structurally non-zero entries are written) and copied to out, so out is written strictly
 * sequentially, with non-temporal stores when it is larger than a cache.
 * (Writing lane by lane into column-major Y touches 10 n^2 pages per step; scattering straight
 * into out's rows stalls on cache misses the prefetcher cannot foresee: both are slower.) On x86-64 with GCC the kernel is compiled for x86-64-v3 (AVX2, FMA) and for the
 * baseline, and the loader picks the one the CPU runs.
 *
 * Fused normal equations (normal_equations()): the same tile, never copied out. Per joint j the
 * entries of the requested (base) columns that joint j's rows can hold (link i's columns for
 * j <= i, the friction, armature and offset columns the maps give j) are packed with tau_j into
 * rows x_k = [y_kj(active), tau_kj, 0 padding] of TILE_SAMPLES samples, and the upper triangle of
 * sum_k x_k x_k^T (Y_j^T Y_j, Y_j^T tau_j, tau_j^T tau_j at once) is updated by a rank-TILE_SAMPLES
 * update in 4 x 8 register blocks; the per-joint sums are added to the caller's (n, r, r) Gram,
 * (n, r) moment and (n,) torque square sums at the end of the call. Y is never written to memory.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_kernel_common.h"
#if defined(__x86_64__) && defined(__SSE2__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_STREAMING_STORES 1
#endif

#define LANES 4
#define MAX_JOINTS 64
#define FRAME_CHANGE_SIZE 13
/* Outputs larger than this [bytes] are written with non-temporal stores: they would not stay in
 * cache anyway, and streaming skips reading every line before writing it. */
#define STREAM_THRESHOLD (8 << 20)

typedef double vd __attribute__((vector_size(LANES * sizeof(double))));
typedef long long vl __attribute__((vector_size(LANES * sizeof(long long))));

#if defined(__clang__)
#define SHUFFLE(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
#define SHUFFLE(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, (vl){i0, i1, i2, i3})
#endif
#define INLINE static inline __attribute__((always_inline))

/* How a frame change rotates: DH rows turn about x only (alpha), and often not at all. */
enum rotation_kind { ROTATION_NONE, ROTATION_ABOUT_X, ROTATION_GENERAL };

typedef struct {
    int identity, translates;
    enum rotation_kind rotation;
    double r[9];
    double p[3];
} frame_change;

typedef struct {
    int n;
    int prismatic[MAX_JOINTS];
    frame_change to_joint[MAX_JOINTS];
    frame_change to_link[MAX_JOINTS];
    double gravity[3];
} chain;

/* A non-zero entry of a drive map: row `row` enters joint `joint` with `factor`. */
typedef struct {
    int row, joint;
    double factor;
} map_entry;

#define MAX_MAP_ROWS (2 * MAX_JOINTS)
#define MAX_MAP_ENTRIES (MAX_MAP_ROWS * MAX_JOINTS)

typedef struct {
    const double *q, *qd, *qdd;  /* (N, n) [rad or m, rad/s or m/s, rad/s^2 or m/s^2] */
    const double *friction;      /* (N, friction_rows, n_friction) */
    int n_friction, friction_rows, armature_rows, offset;
    const map_entry *friction_map, *armature_map;
    int friction_entries, armature_entries;
    const double *armature_rows_of_joints; /* (armature_rows, n): A */
    Py_ssize_t n_samples, p;
    double *out;                 /* (N, n, p), C order */
    double *tile;                /* (LANES, n, p), zero where Y is structurally zero */
    int stream;                  /* copy tiles with non-temporal stores */
} arrays;

/* Lanes of joint i of samples k, k + 1, ... from an (N, n) array; missing lanes are 0. */
INLINE vd gather(const double *values, int n, Py_ssize_t k, int i, int lanes)
{
    vd lane_values = {0.0, 0.0, 0.0, 0.0};
    for (int lane = 0; lane < lanes; lane++)
        lane_values[lane] = values[(k + lane) * n + i];
    return lane_values;
}

/* sin and cos by Cody-Waite reduction to r in [-pi/4, pi/4] (x = r + m pi/2) and the Cephes
 * minimax polynomials (within 1 ulp on that interval; the reduction is exact for |x| < 1e5). */
INLINE void sine_cosine(vd x, vd *sine, vd *cosine)
{
    const double shifter = 6755399441055744.0; /* 1.5 2^52: adding it rounds to an integer */
    vd shifted = x * 0.63661977236758134308 + shifter;
    vd m = shifted - shifter;
    vd r = ((x - m * 1.57079625129699707031) - m * 7.54978941586159635335e-8)
           - m * 5.39030285815811905290e-15;
    vd z = r * r;
    vd s = r + r * z * (((((1.58962301576546568060e-10 * z - 2.50507477628578072866e-8) * z
                            + 2.75573136213857245213e-6) * z - 1.98412698295895385996e-4) * z
                          + 8.33333333332211858878e-3) * z - 1.66666666666666307295e-1);
    vd c = 1.0 - 0.5 * z + z * z * (((((-1.13585365213876817300e-11 * z
                                        + 2.08757008419747316778e-9) * z
                                       - 2.75573141792967388112e-7) * z
                                      + 2.48015872888517045348e-5) * z
                                     - 1.38888888888730564116e-3) * z
                                    + 4.16666666666665929218e-2);
    vl quadrant = (vl)shifted;                 /* m mod 4 in the low bits */
    vl swap = (quadrant & 1) != 0;             /* odd quadrants: sin <-> cos */
    vl sign = (vl){1, 1, 1, 1} << 63;
    vl sine_bits = ((vl)s & ~swap) | ((vl)c & swap);
    vl cosine_bits = ((vl)c & ~swap) | ((vl)s & swap);
    *sine = (vd)(sine_bits ^ (((quadrant & 2) != 0) & sign));
    *cosine = (vd)(cosine_bits ^ ((((quadrant + 1) & 2) != 0) & sign));
}

/* r[l] = (v[0][l], v[1][l], v[2][l], v[3][l]): lane l of four vectors as one vector. */
INLINE void transpose(const vd v[4], vd r[4])
{
    vd low01 = SHUFFLE(v[0], v[1], 0, 4, 2, 6), high01 = SHUFFLE(v[0], v[1], 1, 5, 3, 7);
    vd low23 = SHUFFLE(v[2], v[3], 0, 4, 2, 6), high23 = SHUFFLE(v[2], v[3], 1, 5, 3, 7);
    r[0] = SHUFFLE(low01, low23, 0, 1, 4, 5);
    r[1] = SHUFFLE(high01, high23, 0, 1, 4, 5);
    r[2] = SHUFFLE(low01, low23, 2, 3, 6, 7);
    r[3] = SHUFFLE(high01, high23, 2, 3, 6, 7);
}

/* The 10 values of one (link, joint) pair into the rows of `lanes` samples:
 * target[l * row_stride + c] = values[c][l]. */
INLINE void store_pair(double *target, Py_ssize_t row_stride, const vd values[10], int lanes)
{
    if (lanes == LANES) {
        const vd zero = {0.0, 0.0, 0.0, 0.0};
        const vd last[4] = {values[8], values[9], zero, zero};
        vd rows[3][4];
        transpose(values, rows[0]);
        transpose(values + 4, rows[1]);
        transpose(last, rows[2]);
        for (int l = 0; l < LANES; l++) {
            memcpy(target + l * row_stride, &rows[0][l], 4 * sizeof(double));
            memcpy(target + l * row_stride + 4, &rows[1][l], 4 * sizeof(double));
            memcpy(target + l * row_stride + 8, &rows[2][l], 2 * sizeof(double));
        }
    } else {
        for (int l = 0; l < lanes; l++)
            for (int c = 0; c < 10; c++)
                target[l * row_stride + c] = values[c][l];
    }
}

#ifdef HAVE_STREAMING_STORES
/* count doubles from tile to a 16-byte aligned target with non-temporal stores (count even). */
static void stream_copy_sse2(double *target, const double *tile, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i += 2)
        _mm_stream_pd(target + i, _mm_loadu_pd(tile + i));
}

/* The same with 32-byte stores where the CPU has AVX (half the instructions). */
__attribute__((target("avx"))) static void stream_copy_avx(double *target, const double *tile,
                                                           Py_ssize_t count)
{
    Py_ssize_t i = 0;
    if ((uintptr_t)target & 31) {
        _mm_stream_pd(target, _mm_loadu_pd(tile));
        i = 2;
    }
    for (; i + 4 <= count; i += 4)
        _mm256_stream_pd(target + i, _mm256_loadu_pd(tile + i));
    for (; i < count; i += 2)
        _mm_stream_pd(target + i, _mm_loadu_pd(tile + i));
}

static void (*stream_copy)(double *, const double *, Py_ssize_t) = stream_copy_sse2;
#endif

INLINE void copy_tile(double *target, const double *tile, Py_ssize_t count, int stream)
{
#ifdef HAVE_STREAMING_STORES
    if (stream && ((uintptr_t)target & 15) == 0 && count % 2 == 0) {
        stream_copy(target, tile, count);
        return;
    }
#endif
    (void)stream;
    memcpy(target, tile, (size_t)count * sizeof(double));
}

INLINE void rotate(const frame_change *change, vd v[3])
{
    const double *r = change->r;
    vd x = v[0], y = v[1], z = v[2];
    switch (change->rotation) {
    case ROTATION_NONE:
        return;
    case ROTATION_ABOUT_X:
        v[1] = r[4] * y + r[5] * z;
        v[2] = r[7] * y + r[8] * z;
        return;
    case ROTATION_GENERAL:
        v[0] = r[0] * x + r[1] * y + r[2] * z;
        v[1] = r[3] * x + r[4] * y + r[5] * z;
        v[2] = r[6] * x + r[7] * y + r[8] * z;
        return;
    }
}

/* a_B = r (a_A + dw x p + w (w . p) - p |w|^2); w_B = r w_A; dw_B = r dw_A. */
INLINE void move_motion(const frame_change *change, vd w[3], vd dw[3], vd a[3])
{
    if (change->translates) {
        const double *p = change->p;
        vd w_dot_p = w[0] * p[0] + w[1] * p[1] + w[2] * p[2];
        vd w_squared = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
        a[0] += dw[1] * p[2] - dw[2] * p[1] + w[0] * w_dot_p - p[0] * w_squared;
        a[1] += dw[2] * p[0] - dw[0] * p[2] + w[1] * w_dot_p - p[1] * w_squared;
        a[2] += dw[0] * p[1] - dw[1] * p[0] + w[2] * w_dot_p - p[2] * w_squared;
    }
    rotate(change, w);
    rotate(change, dw);
    rotate(change, a);
}

/* u_B = r u_A; l_B = r (l_A - p x u_A). */
INLINE void move_twist(const frame_change *change, vd l[3], vd u[3])
{
    if (change->translates) {
        const double *p = change->p;
        l[0] -= p[1] * u[2] - p[2] * u[1];
        l[1] -= p[2] * u[0] - p[0] * u[2];
        l[2] -= p[0] * u[1] - p[1] * u[0];
    }
    rotate(change, l);
    rotate(change, u);
}

/* v <- Rz(q)^T v: x' = c x + s y, y' = c y - s x. */
INLINE void rotate_z_transposed(vd v[3], vd c, vd s)
{
    vd x = v[0];
    v[0] = c * x + s * v[1];
    v[1] = c * v[1] - s * x;
}

/* The inertial columns of `lanes` samples from k into the tile; entries of joints j beyond link
 * i are not written (they stay zero). */
INLINE void inertial_columns(const chain *robot, const arrays *data, Py_ssize_t k, int lanes)
{
    const int n = robot->n;
    const Py_ssize_t row_stride = (Py_ssize_t)n * data->p;
    const vd zero = {0.0, 0.0, 0.0, 0.0};
    vd w[3] = {zero, zero, zero}, dw[3] = {zero, zero, zero};
    vd a[3] = {zero - robot->gravity[0], zero - robot->gravity[1], zero - robot->gravity[2]};
    vd l[MAX_JOINTS][3], u[MAX_JOINTS][3];

    for (int i = 0; i < n; i++) {
        const frame_change *to_joint = &robot->to_joint[i], *to_link = &robot->to_link[i];
        if (!to_joint->identity) {
            move_motion(to_joint, w, dw, a);
            for (int j = 0; j < i; j++)
                move_twist(to_joint, l[j], u[j]);
        }
        vd velocity = gather(data->qd, n, k, i, lanes);
        if (robot->prismatic[i]) {
            /* p = z q: a += dw x p + w x (w x p) + 2 w x z qd + z qdd; twists l -= p x u */
            vd displacement = gather(data->q, n, k, i, lanes);
            a[0] += (dw[1] + w[0] * w[2]) * displacement + 2.0 * w[1] * velocity;
            a[1] += (w[1] * w[2] - dw[0]) * displacement - 2.0 * w[0] * velocity;
            a[2] += gather(data->qdd, n, k, i, lanes) - (w[0] * w[0] + w[1] * w[1]) * displacement;
            for (int j = 0; j < i; j++) {
                l[j][0] += displacement * u[j][1];
                l[j][1] -= displacement * u[j][0];
            }
            l[i][0] = l[i][1] = zero;
            l[i][2] = zero + 1.0;
            u[i][0] = u[i][1] = u[i][2] = zero;
        } else {
            vd c, s;
            sine_cosine(gather(data->q, n, k, i, lanes), &s, &c);
            rotate_z_transposed(w, c, s);
            rotate_z_transposed(dw, c, s);
            rotate_z_transposed(a, c, s);
            for (int j = 0; j < i; j++) {
                rotate_z_transposed(l[j], c, s);
                rotate_z_transposed(u[j], c, s);
            }
            l[i][0] = l[i][1] = l[i][2] = zero;
            u[i][0] = u[i][1] = zero;
            u[i][2] = zero + 1.0;
            /* w_i = Rz^T w_{i-1} + z qd_i; dw_i = Rz^T dw_{i-1} + (Rz^T w_{i-1}) x z qd_i + z qdd_i */
            dw[0] += velocity * w[1];
            dw[1] -= velocity * w[0];
            dw[2] += gather(data->qdd, n, k, i, lanes);
            w[2] += velocity;
        }
        if (!to_link->identity) {
            move_motion(to_link, w, dw, a);
            for (int j = 0; j <= i; j++)
                move_twist(to_link, l[j], u[j]);
        }

        /* f = m a + B h with B = S(dw) + S(w)^2; n = D I - S(a) h with D = L(dw) + S(w) L(w) */
        vd wx = w[0], wy = w[1], wz = w[2], dwx = dw[0], dwy = dw[1], dwz = dw[2];
        vd ax = a[0], ay = a[1], az = a[2];
        vd wxx = wx * wx, wyy = wy * wy, wzz = wz * wz;
        vd wxy = wx * wy, wxz = wx * wz, wyz = wy * wz;
        vd b00 = -wyy - wzz, b01 = wxy - dwz, b02 = wxz + dwy;
        vd b10 = wxy + dwz, b11 = -wxx - wzz, b12 = wyz - dwx;
        vd b20 = wxz - dwy, b21 = wyz + dwx, b22 = -wxx - wyy;
        vd d[3][6] = {
            {dwx, dwy - wxz, -wyz, dwz + wxy, wyy - wzz, wyz},
            {wxz, dwx + wyz, dwy, wzz - wxx, dwz - wxy, -wxz},
            {-wxy, wxx - wyy, wxy, dwx - wyz, dwy + wxz, dwz},
        };
        double *link_columns = data->tile + 10 * i;
        for (int j = 0; j <= i; j++) {
            vd lx = l[j][0], ly = l[j][1], lz = l[j][2];
            vd ux = u[j][0], uy = u[j][1], uz = u[j][2];
            vd values[10];
            values[0] = lx * ax + ly * ay + lz * az;
            values[1] = lx * b00 + ly * b10 + lz * b20 + ay * uz - az * uy;
            values[2] = lx * b01 + ly * b11 + lz * b21 + az * ux - ax * uz;
            values[3] = lx * b02 + ly * b12 + lz * b22 + ax * uy - ay * ux;
            for (int c = 0; c < 6; c++)
                values[4 + c] = ux * d[0][c] + uy * d[1][c] + uz * d[2][c];
            store_pair(link_columns + j * data->p, row_stride, values, lanes);
        }
    }
}

/* The drive columns after the 10 n inertial ones: friction row r's coefficients at
 * 10 n + r n_friction, armature row r at 10 n + friction_rows n_friction + r, joint j's offset
 * after those; only the maps' entries are written (the rest stays zero). */
INLINE void joint_columns(int n, const arrays *data, Py_ssize_t k, int lanes)
{
    const int n_friction = data->n_friction, friction_rows = data->friction_rows;
    const Py_ssize_t p = data->p;
    const int armature_start = 10 * n + friction_rows * n_friction;
    const int offset_start = armature_start + data->armature_rows;
    for (int lane = 0; lane < lanes; lane++) {
        double *rows = data->tile + (Py_ssize_t)lane * n * p;   /* joint j's row at rows + j p */
        const double *friction = data->friction + (k + lane) * friction_rows * n_friction;
        for (int e = 0; e < data->friction_entries; e++) {
            const map_entry *entry = &data->friction_map[e];
            const double *values = friction + entry->row * n_friction;
            double *columns = rows + entry->joint * p + 10 * n + entry->row * n_friction;
            for (int f = 0; f < n_friction; f++)
                columns[f] = entry->factor * values[f];
        }
        if (data->armature_rows) {
            const double *qdd = data->qdd + (k + lane) * n;
            double row_acceleration[MAX_MAP_ROWS];
            for (int r = 0; r < data->armature_rows; r++) {
                const double *weights = data->armature_rows_of_joints + r * n;
                double sum = 0.0;
                for (int i = 0; i < n; i++)
                    sum += weights[i] * qdd[i];
                row_acceleration[r] = sum;
            }
            for (int e = 0; e < data->armature_entries; e++) {
                const map_entry *entry = &data->armature_map[e];
                rows[entry->joint * p + armature_start + entry->row] = entry->factor
                                                                       * row_acceleration[entry->row];
            }
        }
        if (data->offset)
            for (int j = 0; j < n; j++)
                rows[j * p + offset_start + j] = 1.0;
    }
}

INLINE void samples(const chain *robot, const arrays *data, Py_ssize_t k, int lanes)
{
    const Py_ssize_t count = (Py_ssize_t)lanes * robot->n * data->p;
    inertial_columns(robot, data, k, lanes);
    joint_columns(robot->n, data, k, lanes);
    copy_tile(data->out + k * robot->n * data->p, data->tile, count, data->stream);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void evaluate(const chain *robot, const arrays *data)
{
    Py_ssize_t k = 0;
    for (; k + LANES <= data->n_samples; k += LANES)
        samples(robot, data, k, LANES);
    if (k < data->n_samples)
        samples(robot, data, k, (int)(data->n_samples - k));
#ifdef HAVE_STREAMING_STORES
    if (data->stream)
        _mm_sfence();
#endif
}

/* Samples accumulated per rank update of the fused normal equations. */
#define TILE_SAMPLES 32

/* Per joint j: the active (base) columns, their packed rows and their Gram sums. */
typedef struct {
    int n_columns;                 /* r, columns asked for */
    int active[MAX_JOINTS];        /* a_j: requested columns joint j's rows can hold */
    int stride[MAX_JOINTS];        /* a_j + 1 (tau_j) rounded up to LANES */
    int *full;                     /* full[j r + a]: column of Y of joint j's packed entry a */
    int *position;                 /* position[j r + a]: its index among the r requested columns */
    double *packed[MAX_JOINTS];    /* (TILE_SAMPLES, stride_j) rows x_k, padding zero */
    double *sums[MAX_JOINTS];      /* (stride_j, stride_j): sum x_k x_k^T, upper blocks valid */
} normal_sums;

/* Rows k .. k + lanes - 1 of the tile (joint j's row of sample k + l at tile + (l n + j) p) into
 * packed rows row0 .. row0 + lanes - 1, with tau_kj after the active entries. */
INLINE void pack_rows(int n, const arrays *data, const normal_sums *sums, const double *tau, Py_ssize_t k,
                      int lanes, int row0)
{
    const Py_ssize_t p = data->p;
    for (int j = 0; j < n; j++) {
        const int active = sums->active[j], stride = sums->stride[j];
        const int *full = sums->full + (Py_ssize_t)j * sums->n_columns;
        for (int l = 0; l < lanes; l++) {
            const double *row = data->tile + ((Py_ssize_t)l * n + j) * p;
            double *target = sums->packed[j] + (Py_ssize_t)(row0 + l) * stride;
            for (int a = 0; a < active; a++)
                target[a] = row[full[a]];
            target[active] = tau[(k + l) * n + j];
        }
    }
}

/* sums += sum_{l < rows} x_l x_l^T on the blocks on and above the diagonal (4 x 8 register blocks;
 * x (rows, stride), stride a multiple of LANES, sums (stride, stride)). A function of its own, cloned
 * for x86-64-v4 too (AVX-512's 32 registers), and 32-sample tiles: together they halved the
 * accumulation's time against 16-sample tiles inlined into an x86-64-v3 accumulate(). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static __attribute__((noinline)) void rank_update(double *sums, const double *x, int stride, int rows)
{
    for (int a = 0; a < stride; a += 4) {
        int b = a;
        for (; b + 8 <= stride; b += 8) {
            vd c[4][2];
            for (int i = 0; i < 4; i++) {
                memcpy(&c[i][0], sums + (a + i) * stride + b, sizeof(vd));
                memcpy(&c[i][1], sums + (a + i) * stride + b + 4, sizeof(vd));
            }
            for (int l = 0; l < rows; l++) {
                const double *row = x + l * stride;
                vd y0, y1;
                memcpy(&y0, row + b, sizeof(vd));
                memcpy(&y1, row + b + 4, sizeof(vd));
                for (int i = 0; i < 4; i++) {
                    c[i][0] += row[a + i] * y0;
                    c[i][1] += row[a + i] * y1;
                }
            }
            for (int i = 0; i < 4; i++) {
                memcpy(sums + (a + i) * stride + b, &c[i][0], sizeof(vd));
                memcpy(sums + (a + i) * stride + b + 4, &c[i][1], sizeof(vd));
            }
        }
        if (b < stride) {   /* a last block of 4 columns */
            vd c[4];
            for (int i = 0; i < 4; i++)
                memcpy(&c[i], sums + (a + i) * stride + b, sizeof(vd));
            for (int l = 0; l < rows; l++) {
                const double *row = x + l * stride;
                vd y0;
                memcpy(&y0, row + b, sizeof(vd));
                for (int i = 0; i < 4; i++)
                    c[i] += row[a + i] * y0;
            }
            for (int i = 0; i < 4; i++)
                memcpy(sums + (a + i) * stride + b, &c[i], sizeof(vd));
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void accumulate(const chain *robot, const arrays *data, const normal_sums *sums, const double *tau)
{
    const int n = robot->n;
    Py_ssize_t k = 0;
    while (k < data->n_samples) {
        int rows = 0;
        while (rows < TILE_SAMPLES && k < data->n_samples) {   /* the last group may hold < LANES */
            int lanes = data->n_samples - k < LANES ? (int)(data->n_samples - k) : LANES;
            inertial_columns(robot, data, k, lanes);
            joint_columns(n, data, k, lanes);
            pack_rows(n, data, sums, tau, k, lanes, rows);
            rows += lanes;
            k += lanes;
        }
        for (int j = 0; j < n; j++)
            rank_update(sums->sums[j], sums->packed[j], sums->stride[j], rows);
    }
}

static int read_chain(const Py_buffer *view, const Py_buffer *gravity, chain *robot)
{
    const Py_ssize_t n = view->shape[0];
    if (n < 1 || n > MAX_JOINTS || view->shape[1] != 2 || view->shape[2] != FRAME_CHANGE_SIZE) {
        PyErr_Format(PyExc_ValueError, "chain must have shape (n, 2, %d) with 1 <= n <= %d",
                     FRAME_CHANGE_SIZE, MAX_JOINTS);
        return -1;
    }
    if (gravity->shape[0] != 3) {
        PyErr_SetString(PyExc_ValueError, "gravity must have shape (3,)");
        return -1;
    }
    const double *values = view->buf;
    robot->n = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        for (int which = 0; which < 2; which++) {
            const double *source = values + (i * 2 + which) * FRAME_CHANGE_SIZE;
            frame_change *change = which == 0 ? &robot->to_joint[i] : &robot->to_link[i];
            change->identity = source[0] != 0.0;
            memcpy(change->r, source + 1, sizeof change->r);
            memcpy(change->p, source + 10, sizeof change->p);
            change->translates = change->p[0] != 0.0 || change->p[1] != 0.0 || change->p[2] != 0.0;
            const double *r = change->r;
            int x_fixed = r[0] == 1.0 && r[1] == 0.0 && r[2] == 0.0 && r[3] == 0.0 && r[6] == 0.0;
            change->rotation = !x_fixed ? ROTATION_GENERAL
                               : (r[4] == 1.0 && r[5] == 0.0 && r[7] == 0.0 && r[8] == 1.0)
                               ? ROTATION_NONE : ROTATION_ABOUT_X;
        }
    }
    memcpy(robot->gravity, gravity->buf, sizeof robot->gravity);
    return 0;
}

/* The non-zero entries of a (rows, n) map; -1 (ValueError set) when it has too many rows. */
static int read_map(const Py_buffer *view, Py_ssize_t n, const char *name, map_entry *entries, int *count)
{
    const Py_ssize_t rows = view->shape[0];
    if (rows > MAX_MAP_ROWS || view->shape[1] != n) {
        PyErr_Format(PyExc_ValueError, "%s must have shape (rows, %zd) with rows <= %d", name, n, MAX_MAP_ROWS);
        return -1;
    }
    const double *values = view->buf;
    *count = 0;
    for (Py_ssize_t r = 0; r < rows; r++)
        for (Py_ssize_t j = 0; j < n; j++)
            if (values[r * n + j] != 0.0)
                entries[(*count)++] = (map_entry){(int)r, (int)j, values[r * n + j]};
    return 0;
}

/* The inputs both entries share: the first N_INPUTS arrays (chain .. armature_map) and offset. */
#define N_INPUTS 9

typedef struct {
    Py_buffer views[N_INPUTS];
    int acquired;
    chain robot;
    map_entry *entries;
    arrays data;             /* everything but p, out, tile and stream */
} inputs;

static const char *input_names[N_INPUTS] = {"chain", "prismatic", "gravity", "q", "qd", "qdd", "friction",
                                            "friction_map", "armature_map"};

static void release_inputs(inputs *in)
{
    PyMem_RawFree(in->entries);
    in->entries = NULL;
    for (int i = 0; i < in->acquired; i++)
        PyBuffer_Release(&in->views[i]);
    in->acquired = 0;
}

/* Acquire and check the shared inputs; 0, or -1 with a ValueError (release_inputs either way). */
static int read_inputs(PyObject *const objects[N_INPUTS], int offset, inputs *in)
{
    static const int ndims[N_INPUTS] = {3, 1, 1, 2, 2, 2, 3, 2, 2};
    Py_buffer *views = in->views;
    in->acquired = 0;
    in->entries = NULL;
    for (; in->acquired < N_INPUTS; in->acquired++) {
        if (get_buffer(objects[in->acquired], &views[in->acquired], 0, ndims[in->acquired], 0,
                       input_names[in->acquired]) < 0)
            return -1;
    }
    chain *robot = &in->robot;
    if (read_chain(&views[0], &views[2], robot) < 0)
        return -1;
    const Py_ssize_t n = robot->n, n_samples = views[3].shape[0];
    if (views[1].shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "prismatic must have shape (%zd,)", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        robot->prismatic[i] = ((const double *)views[1].buf)[i] != 0.0;
    for (int i = 3; i < 6; i++) {
        if (views[i].shape[0] != n_samples || views[i].shape[1] != n) {
            PyErr_Format(PyExc_ValueError, "%s must have shape (%zd, %zd), got (%zd, %zd)",
                         input_names[i], n_samples, n, views[i].shape[0], views[i].shape[1]);
            return -1;
        }
    }
    const Py_buffer *friction = &views[6];
    const Py_ssize_t friction_rows = views[7].shape[0], armature_rows = views[8].shape[0];
    const Py_ssize_t n_friction = friction->shape[2];
    if (friction->shape[0] != n_samples || friction->shape[1] != friction_rows) {
        PyErr_Format(PyExc_ValueError, "friction must have shape (%zd, %zd, f), one row per friction_map row",
                     n_samples, friction_rows);
        return -1;
    }
    in->entries = PyMem_RawMalloc(2 * MAX_MAP_ENTRIES * sizeof(map_entry));
    if (in->entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int friction_entries, armature_entries;
    if (read_map(&views[7], n, input_names[7], in->entries, &friction_entries) < 0
        || read_map(&views[8], n, input_names[8], in->entries + MAX_MAP_ENTRIES, &armature_entries) < 0)
        return -1;
    const Py_ssize_t p = 10 * n + friction_rows * n_friction + armature_rows + (offset ? n : 0);
    in->data = (arrays){views[3].buf, views[4].buf, views[5].buf, friction->buf, (int)n_friction,
                        (int)friction_rows, (int)armature_rows, offset, in->entries, in->entries + MAX_MAP_ENTRIES,
                        friction_entries, armature_entries, views[8].buf, n_samples, p, NULL, NULL, 0};
    return 0;
}

#define N_ARRAYS (N_INPUTS + 1)

PyDoc_STRVAR(regressor_doc,
"regressor(chain, prismatic, gravity, q, qd, qdd, friction, friction_map, armature_map, offset, out)\n--\n\n"
"Write the regressor of N samples into out (every entry).\n\n"
"chain (n, 2, 13): per joint the to_joint and to_link frame changes [identity flag,\n"
"r row-major (v_B = r v_A), p [m]]; prismatic (n,): 1.0 where joint i translates along z\n"
"(q [m]), 0.0 where it turns about z (q [rad]); gravity (3,) [m/s^2]; q, qd, qdd (N, n);\n"
"friction (N, R, f): friction columns of each friction row's velocity; friction_map (R, n):\n"
"row r enters joint j times friction_map[r, j]; armature_map (A, n): rotor inertia r's column\n"
"in joint j is armature_map[r, j] (armature_map[r] . qdd); offset: bool. out (N, n, p),\n"
"p = 10 n + R f + A + n offset: out[k, j, c] multiplies parameter c in joint j's torque at\n"
"sample k. All arrays float64, C-contiguous.");

static PyObject *regressor(PyObject *module, PyObject *args)
{
    PyObject *objects[N_ARRAYS];
    Py_buffer out;
    int offset, have_out = 0;
    PyObject *result = NULL;
    double *tile = NULL;
    inputs in = {.acquired = 0, .entries = NULL};
    (void)module;

    if (!PyArg_ParseTuple(args, "OOOOOOOOOpO:regressor", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7], &objects[8],
                          &offset, &objects[9]))
        return NULL;
    if (read_inputs(objects, offset, &in) < 0)
        goto done;
    if (get_buffer(objects[9], &out, 1, 3, 0, "out") < 0)
        goto done;
    have_out = 1;
    const Py_ssize_t n = in.robot.n, n_samples = in.data.n_samples, p = in.data.p;
    if (out.shape[0] != n_samples || out.shape[1] != n || out.shape[2] != p) {
        PyErr_Format(PyExc_ValueError, "out must have shape (%zd, %zd, %zd)", n_samples, n, p);
        goto done;
    }
    tile = PyMem_RawCalloc((size_t)(LANES * n * p), sizeof(double));
    if (tile == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    in.data.out = out.buf;
    in.data.tile = tile;
    in.data.stream = out.len > STREAM_THRESHOLD;
    Py_BEGIN_ALLOW_THREADS
    evaluate(&in.robot, &in.data);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_RawFree(tile);
    if (have_out)
        PyBuffer_Release(&out);
    release_inputs(&in);
    return result;
}

/*
 * One sample's regressor, for Regressor.compute_one: the robot's inputs read once, at creation, over the
 * creator's (1, n) state arrays and (1, n, 2) friction array, which this object then writes; each call
 * takes q, qd, qdd (float64 arrays or lists/tuples of numbers, length n), checks them and computes the
 * sign friction columns (joint side, coulomb_viscous or coulomb_viscous_lead without drift: the
 * arithmetic of sign_columns) and the regressor, under the GIL (so one object serves every thread).
 * fill(out) does the same for the sample its creator wrote into the state arrays (Regressor.online(), one
 * object per thread); torque() is the one-point feed-forward.
 */
typedef struct {
    PyObject_HEAD
    inputs in;
    int lead;                /* sgn(qd + reversal_lead qdd) instead of sgn(qd) */
    double reversal_lead;    /* [s] */
    double dead_band;        /* [rad/s] */
    double *tile;            /* (LANES, n, p), as regressor() allocates it */
    double *y;               /* (n, p): torque()'s regressor */
    PyObject *empty;         /* numpy.empty */
    PyObject *ndarray;       /* numpy.ndarray: the only buffer type read (no Python code runs to read it) */
    PyObject *shape;         /* (n, p) */
    PyObject *row_shape;     /* (1, n) */
} one_sample;

static void one_sample_dealloc(one_sample *self)
{
    release_inputs(&self->in);
    PyMem_RawFree(self->tile);
    PyMem_RawFree(self->y);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->ndarray);
    Py_XDECREF(self->shape);
    Py_XDECREF(self->row_shape);
    PyObject_Free(self);
}

/* State values of object into target (n,): 1 when read and finite; 0 when object is not a float64 ndarray
 * (exactly: no Python code runs to read it) or list or tuple of numbers of length n, or holds a non-finite
 * value (the caller's checked path says why). */
static int read_state(PyObject *object, PyObject *ndarray, Py_ssize_t n, double *target)
{
    if (PyList_CheckExact(object) || PyTuple_CheckExact(object)) {
        if (PySequence_Fast_GET_SIZE(object) != n)
            return 0;
        PyObject **items = PySequence_Fast_ITEMS(object);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (PyFloat_CheckExact(items[i]))
                target[i] = PyFloat_AS_DOUBLE(items[i]);
            else if (PyLong_CheckExact(items[i])) {
                target[i] = PyLong_AsDouble(items[i]);
                if (target[i] == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return 0;
                }
            } else
                return 0;
        }
    } else {
        Py_buffer view;
        if ((PyObject *)Py_TYPE(object) != ndarray
            || PyObject_GetBuffer(object, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            return 0;
        }
        const char *format = view.format;
        if (format[0] == '<' || format[0] == '=' || format[0] == '@')
            format++;
        const int usable = view.ndim == 1 && view.shape[0] == n && view.itemsize == sizeof(double)
                           && strcmp(format, "d") == 0;
        if (usable)
            memcpy(target, view.buf, (size_t)n * sizeof(double));
        PyBuffer_Release(&view);
        if (!usable)
            return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!isfinite(target[i]))
            return 0;
    return 1;
}

/* The sign friction columns and the regressor (n, p) of the sample in this object's state buffers, into out. */
static void regressor_of_states(one_sample *self, double *out)
{
    const Py_ssize_t n = self->in.robot.n;
    const double *qd = self->in.views[4].buf, *qdd = self->in.views[5].buf;
    sign_columns(n, qd, self->lead ? qdd : NULL, self->reversal_lead, self->dead_band, NULL, n,
                 self->in.views[6].buf);
    arrays data = self->in.data;
    data.out = out;
    data.tile = self->tile;
    data.stream = 0;
    evaluate(&self->in.robot, &data);
}

PyDoc_STRVAR(one_sample_compute_doc,
"compute(q, qd, qdd)\n--\n\n"
"The regressor (n, p) of one sample, a new array; None when q, qd or qdd is not a float64 array\n"
"or list or tuple of numbers of length n, or not finite (the caller's checked path then says why).");

static PyObject *one_sample_compute(one_sample *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "compute takes q, qd, qdd, got %zd arguments", nargs);
        return NULL;
    }
    /* the result first: numpy.empty may run Python code (a garbage collection), and with it another thread's
     * compute on this object's buffers; from reading the states on, nothing here lets go of the GIL */
    PyObject *result = PyObject_CallOneArg(self->empty, self->shape);
    if (result == NULL)
        return NULL;
    Py_buffer out;
    if (get_buffer(result, &out, 1, 2, 0, "numpy.empty's result") < 0) {
        Py_DECREF(result);
        return NULL;
    }
    const Py_ssize_t n = self->in.robot.n;
    double *q = self->in.views[3].buf, *qd = self->in.views[4].buf, *qdd = self->in.views[5].buf;
    if (!read_state(args[0], self->ndarray, n, q) || !read_state(args[1], self->ndarray, n, qd)
        || !read_state(args[2], self->ndarray, n, qdd)) {
        PyBuffer_Release(&out);
        Py_DECREF(result);
        Py_RETURN_NONE;
    }
    regressor_of_states(self, out.buf);
    PyBuffer_Release(&out);
    return result;
}

PyDoc_STRVAR(one_sample_fill_doc,
"fill(out)\n--\n\n"
"The regressor of the sample in this object's q, qd, qdd buffers (written by its creator; finite, not\n"
"checked) into out, a C-contiguous float64 (n, p) array: compute's arithmetic, bit for bit, without\n"
"reading, checking or allocating (Regressor.online()'s call).");

static PyObject *one_sample_fill(one_sample *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "fill takes out, got %zd arguments", nargs);
        return NULL;
    }
    Py_buffer out;
    if (get_buffer(args[0], &out, 1, 2, 0, "out") < 0)
        return NULL;
    const Py_ssize_t n = self->in.robot.n, p = self->in.data.p;
    if (out.shape[0] != n || out.shape[1] != p) {
        PyErr_Format(PyExc_ValueError, "fill needs out (%zd, %zd), got (%zd, %zd)", n, p, out.shape[0], out.shape[1]);
        PyBuffer_Release(&out);
        return NULL;
    }
    regressor_of_states(self, out.buf);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* sum_j row[j] theta[j], j = 0..p-1, left to right, each product rounded (no fused multiply-add): what a
 * Python loop over floats gives, bit for bit. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static double ordered_dot(Py_ssize_t p, const double *row, const double *theta)
{
    double sum = 0.0;
    for (Py_ssize_t j = 0; j < p; j++)
        sum += row[j] * theta[j];
    return sum;
}

PyDoc_STRVAR(one_sample_torque_doc,
"torque(fields, order, motion, parameters, back, effort)\n--\n\n"
"One point's torques [N m] (1, n), a new array, in the request's joint order, the whole one-point\n"
"feed-forward in one call: fields (q, qd, qdd), float64 arrays of n values or none (zero) [rad, rad/s,\n"
"rad/s^2] in the request's joint order; order (n,) intp, the request index of each model joint; motion\n"
"(3, 2, n), each field's lower and upper bounds in request order; parameters (p,); back (n,) intp, the\n"
"model index of each request joint; effort (1, 2, n), the torques' bounds in model order. The torque of\n"
"model joint i is the sum over j of Y[i, j] parameters[j], left to right, each product rounded (a\n"
"Python loop's result). None when a value or a torque is beyond its bounds (NaN is beyond every\n"
"bound) or a field's length is neither n nor 0: the caller's checked path then says which.");

static PyObject *one_sample_torque(one_sample *self, PyObject *const *args, Py_ssize_t nargs)
{
    enum { Q, QD, QDD, ORDER, MOTION, PARAMETERS, BACK, EFFORT, OUT, N_VIEWS };
    static const struct {
        const char *name;
        int index, ndim, writable;      /* index: an intp buffer, else float64 */
    } specs[N_VIEWS] = {{"fields[0]", 0, 1, 0}, {"fields[1]", 0, 1, 0}, {"fields[2]", 0, 1, 0}, {"order", 1, 1, 0},
                        {"motion", 0, 3, 0}, {"parameters", 0, 1, 0}, {"back", 1, 1, 0}, {"effort", 0, 3, 0},
                        {"numpy.empty's result", 0, 2, 1}};
    Py_buffer views[N_VIEWS];
    int acquired = 0;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "torque takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 3) {
        PyErr_SetString(PyExc_TypeError, "fields must be a tuple (q, qd, qdd)");
        return NULL;
    }
    /* the result first: numpy.empty may run Python code (a garbage collection), and with it another thread's
     * call on this object's buffers; from reading the states on, nothing here lets go of the GIL */
    PyObject *result = PyObject_CallOneArg(self->empty, self->row_shape);
    if (result == NULL)
        return NULL;
    PyObject *const objects[N_VIEWS] = {PyTuple_GET_ITEM(args[0], 0), PyTuple_GET_ITEM(args[0], 1),
                                        PyTuple_GET_ITEM(args[0], 2), args[1], args[2], args[3], args[4], args[5],
                                        result};
    for (; acquired < N_VIEWS; acquired++)
        if ((specs[acquired].index ? get_index_buffer(objects[acquired], &views[acquired], specs[acquired].name)
             : get_buffer(objects[acquired], &views[acquired], specs[acquired].writable, specs[acquired].ndim, 0,
                          specs[acquired].name)) < 0)
            goto fail;
    const Py_ssize_t n = self->in.robot.n, p = self->in.data.p;
    const Py_ssize_t *model_to_request = views[ORDER].buf, *request_to_model = views[BACK].buf;
    const Py_ssize_t *motion = views[MOTION].shape, *effort = views[EFFORT].shape;
    if (views[ORDER].shape[0] != n || views[BACK].shape[0] != n || views[PARAMETERS].shape[0] != p
        || motion[0] != 3 || motion[1] != 2 || motion[2] != n || effort[0] != 1 || effort[1] != 2 || effort[2] != n) {
        PyErr_Format(PyExc_ValueError, "torque needs order and back (%zd,), motion (3, 2, %zd), parameters (%zd,) "
                     "and effort (1, 2, %zd)", n, n, p, n);
        goto fail;
    }
    if (check_indices(model_to_request, n, n, "order", "joints") < 0
        || check_indices(request_to_model, n, n, "back", "joints") < 0)
        goto fail;
    const double *bounds = views[MOTION].buf;
    int within = views[Q].shape[0] == n;
    for (int f = 0; f < 3 && within; f++)
        within = gather_checked(views[Q + f].shape[0], views[Q + f].buf, n, bounds + 2 * f * n,
                                bounds + (2 * f + 1) * n, model_to_request, n, self->in.views[3 + f].buf);
    if (within) {
        regressor_of_states(self, self->y);
        const double *theta = views[PARAMETERS].buf, *lower = views[EFFORT].buf, *upper = lower + n;
        double *tau = self->tile;       /* n torques in model order; the tile is free again */
        for (Py_ssize_t i = 0; i < n && within; i++) {
            tau[i] = ordered_dot(p, self->y + i * p, theta);
            within = lower[i] <= tau[i] && tau[i] <= upper[i];
        }
        double *torques = views[OUT].buf;
        for (Py_ssize_t k = 0; k < n && within; k++)
            torques[k] = tau[request_to_model[k]];
    }
    if (!within) {
        Py_DECREF(result);
        result = Py_None;
        Py_INCREF(result);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    while (acquired > 0)
        PyBuffer_Release(&views[--acquired]);
    return result;
}

static PyMethodDef one_sample_methods[] = {
    {"compute", (PyCFunction)(void (*)(void))one_sample_compute, METH_FASTCALL, one_sample_compute_doc},
    {"fill", (PyCFunction)(void (*)(void))one_sample_fill, METH_FASTCALL, one_sample_fill_doc},
    {"torque", (PyCFunction)(void (*)(void))one_sample_torque, METH_FASTCALL, one_sample_torque_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject one_sample_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "robot_dynid._regressor_kernel.OneSample",
    .tp_basicsize = sizeof(one_sample),
    .tp_dealloc = (destructor)one_sample_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One sample's regressor (see one_sample()).",
    .tp_methods = one_sample_methods,
};

PyDoc_STRVAR(one_sample_doc,
"one_sample(chain, prismatic, gravity, q, qd, qdd, friction, friction_map, armature_map, offset,\n"
"           lead, reversal_lead, dead_band, empty, ndarray)\n--\n\n"
"A OneSample whose compute(q, qd, qdd) returns one sample's regressor (fill(out) writes that of the\n"
"sample in its buffers, torque(...) gives one point's feed-forward). The arguments are those of\n"
"regressor() for N = 1 (q, qd, qdd (1, n) and friction (1, n, 2) are its buffers from then on, written\n"
"by every call; friction_map the identity: joint-side friction), the friction columns being\n"
"[sgn(qd + reversal_lead qdd) if lead else sgn(qd), qd], zero below dead_band [rad/s]; empty: numpy.empty;\n"
"ndarray: numpy.ndarray.");

static PyObject *one_sample_new(PyObject *module, PyObject *args)
{
    PyObject *objects[N_INPUTS], *empty, *ndarray;
    int offset, lead;
    double reversal_lead, dead_band;
    (void)module;

    if (!PyArg_ParseTuple(args, "OOOOOOOOOpiddOO:one_sample", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &objects[7], &objects[8], &offset, &lead,
                          &reversal_lead, &dead_band, &empty, &ndarray))
        return NULL;
    one_sample *self = PyObject_New(one_sample, &one_sample_type);
    if (self == NULL)
        return NULL;
    self->in = (inputs){.acquired = 0, .entries = NULL};
    self->tile = NULL;
    self->y = NULL;
    self->empty = NULL;
    self->ndarray = NULL;
    self->shape = NULL;
    self->row_shape = NULL;
    if (read_inputs(objects, offset, &self->in) < 0)
        goto fail;
    const Py_ssize_t n = self->in.robot.n, p = self->in.data.p;
    for (int i = 3; i < 7; i++)
        if (self->in.views[i].readonly) {
            PyErr_Format(PyExc_ValueError, "%s must be writable", input_names[i]);
            goto fail;
        }
    if (self->in.data.n_samples != 1 || self->in.data.friction_rows != n || self->in.data.n_friction != 2) {
        PyErr_Format(PyExc_ValueError, "one_sample needs q, qd, qdd (1, %zd) and friction (1, %zd, 2)", n, n);
        goto fail;
    }
    self->tile = PyMem_RawCalloc((size_t)(LANES * n * p), sizeof(double));
    self->y = PyMem_RawCalloc((size_t)(n * p), sizeof(double));
    self->shape = Py_BuildValue("(nn)", n, p);
    self->row_shape = Py_BuildValue("(in)", 1, n);
    if (self->tile == NULL || self->y == NULL || self->shape == NULL || self->row_shape == NULL) {
        if (self->tile == NULL || self->y == NULL)
            PyErr_NoMemory();
        goto fail;
    }
    self->lead = lead;
    self->reversal_lead = reversal_lead;
    self->dead_band = dead_band;
    Py_INCREF(empty);
    self->empty = empty;
    Py_INCREF(ndarray);
    self->ndarray = ndarray;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* Whether joint j's rows can hold column c of Y (the tile entries the kernel writes). */
static int column_in_joint(const arrays *data, int n, Py_ssize_t c, int j)
{
    const Py_ssize_t friction_start = 10 * (Py_ssize_t)n;
    const Py_ssize_t armature_start = friction_start + (Py_ssize_t)data->friction_rows * data->n_friction;
    const Py_ssize_t offset_start = armature_start + data->armature_rows;
    if (c < friction_start)
        return j <= c / 10;
    if (c < armature_start) {
        int row = (int)((c - friction_start) / data->n_friction);
        for (int e = 0; e < data->friction_entries; e++)
            if (data->friction_map[e].row == row && data->friction_map[e].joint == j)
                return 1;
        return 0;
    }
    if (c < offset_start) {
        int row = (int)(c - armature_start);
        for (int e = 0; e < data->armature_entries; e++)
            if (data->armature_map[e].row == row && data->armature_map[e].joint == j)
                return 1;
        return 0;
    }
    return c - offset_start == j;
}

PyDoc_STRVAR(normal_equations_doc,
"normal_equations(chain, prismatic, gravity, q, qd, qdd, friction, friction_map, armature_map, offset,\n"
"                 columns, tau, gram, moment, torque_square_sum)\n--\n\n"
"Add the normal equations of the columns `columns` of the regressor of N samples, without\n"
"writing the regressor: with Y_j (N, r) joint j's rows of Y[:, :, columns],\n"
"gram[j] += Y_j^T Y_j, moment[j] += Y_j^T tau[:, j], torque_square_sum[j] += tau_j^T tau_j.\n\n"
"The first ten arguments as in regressor(); columns (r,): ascending column indices of Y (float64\n"
"holding integers); tau (N, n) [N m]; gram (n, r, r), moment (n, r), torque_square_sum (n,):\n"
"added to (both triangles of gram). All arrays float64, C-contiguous.");

static PyObject *normal_equations(PyObject *module, PyObject *args)
{
    enum { COLUMNS, TAU, GRAM, MOMENT, SQUARES, N_OUTPUTS };
    static const char *names[N_OUTPUTS] = {"columns", "tau", "gram", "moment", "torque_square_sum"};
    static const int ndims[N_OUTPUTS] = {1, 2, 3, 2, 1};
    PyObject *objects[N_INPUTS + N_OUTPUTS];
    Py_buffer views[N_OUTPUTS];
    int offset, acquired = 0;
    PyObject *result = NULL;
    double *tile = NULL, *block = NULL;
    inputs in = {.acquired = 0, .entries = NULL};
    normal_sums sums = {.full = NULL, .position = NULL};
    (void)module;

    if (!PyArg_ParseTuple(args, "OOOOOOOOOpOOOOO:normal_equations", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7], &objects[8],
                          &offset, &objects[9], &objects[10], &objects[11], &objects[12], &objects[13]))
        return NULL;
    if (read_inputs(objects, offset, &in) < 0)
        goto done;
    for (; acquired < N_OUTPUTS; acquired++) {
        if (get_buffer(objects[N_INPUTS + acquired], &views[acquired], acquired >= GRAM, ndims[acquired], 0,
                       names[acquired]) < 0)
            goto done;
    }
    const int n = in.robot.n;
    const Py_ssize_t n_samples = in.data.n_samples, p = in.data.p, r = views[COLUMNS].shape[0];
    const double *columns = views[COLUMNS].buf;
    for (Py_ssize_t a = 0; a < r; a++) {
        if (!(columns[a] >= 0.0 && columns[a] < (double)p && columns[a] == (double)(Py_ssize_t)columns[a])
            || (a > 0 && !(columns[a] > columns[a - 1]))) {
            PyErr_Format(PyExc_ValueError, "columns must be ascending integers in [0, %zd)", p);
            goto done;
        }
    }
    if (views[TAU].shape[0] != n_samples || views[TAU].shape[1] != n
        || views[GRAM].shape[0] != n || views[GRAM].shape[1] != r || views[GRAM].shape[2] != r
        || views[MOMENT].shape[0] != n || views[MOMENT].shape[1] != r || views[SQUARES].shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "tau must have shape (%zd, %d), gram (%d, %zd, %zd), moment (%d, %zd) and "
                     "torque_square_sum (%d,)", n_samples, n, n, r, r, n, r, n);
        goto done;
    }
    sums.n_columns = (int)r;
    sums.full = PyMem_RawMalloc((size_t)(2 * n * (r > 0 ? r : 1)) * sizeof(int));
    tile = PyMem_RawCalloc((size_t)(LANES * n * p), sizeof(double));
    if (sums.full == NULL || tile == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sums.position = sums.full + (Py_ssize_t)n * r;
    Py_ssize_t block_size = 0;
    for (int j = 0; j < n; j++) {
        int active = 0;
        for (Py_ssize_t a = 0; a < r; a++) {
            if (column_in_joint(&in.data, n, (Py_ssize_t)columns[a], j)) {
                sums.full[j * r + active] = (int)columns[a];
                sums.position[j * r + active] = (int)a;
                active++;
            }
        }
        sums.active[j] = active;
        sums.stride[j] = (active + 1 + LANES - 1) / LANES * LANES;
        block_size += (Py_ssize_t)sums.stride[j] * (TILE_SAMPLES + sums.stride[j]);
    }
    block = PyMem_RawCalloc((size_t)block_size, sizeof(double));
    if (block == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    double *next = block;
    for (int j = 0; j < n; j++) {
        sums.packed[j] = next;
        sums.sums[j] = next + (Py_ssize_t)TILE_SAMPLES * sums.stride[j];
        next = sums.sums[j] + (Py_ssize_t)sums.stride[j] * sums.stride[j];
    }
    in.data.tile = tile;
    Py_BEGIN_ALLOW_THREADS
    accumulate(&in.robot, &in.data, &sums, views[TAU].buf);
    Py_END_ALLOW_THREADS
    double *gram = views[GRAM].buf, *moment = views[MOMENT].buf, *squares = views[SQUARES].buf;
    for (int j = 0; j < n; j++) {
        const int active = sums.active[j], stride = sums.stride[j];
        const int *position = sums.position + (Py_ssize_t)j * r;
        const double *sum = sums.sums[j];
        double *joint_gram = gram + (Py_ssize_t)j * r * r;
        for (int a = 0; a < active; a++) {
            for (int b = a; b < active; b++) {
                joint_gram[position[a] * r + position[b]] += sum[a * stride + b];
                if (b != a)
                    joint_gram[position[b] * r + position[a]] += sum[a * stride + b];
            }
            moment[(Py_ssize_t)j * r + position[a]] += sum[a * stride + active];
        }
        squares[j] += sum[active * stride + active];
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_RawFree(block);
    PyMem_RawFree(tile);
    PyMem_RawFree(sums.full);
    for (int i = 0; i < acquired; i++)
        PyBuffer_Release(&views[i]);
    release_inputs(&in);
    return result;
}

PyDoc_STRVAR(sine_cosine_doc,
"sine_cosine(x, sine, cosine)\n--\n\n"
"sin and cos of x [rad] into sine and cosine, by the kernel's own routine (exposed for tests).\n"
"All three float64, C-contiguous, of one length.");

static PyObject *sine_cosine_array(PyObject *module, PyObject *args)
{
    PyObject *objects[3];
    Py_buffer views[3];
    static const char *names[3] = {"x", "sine", "cosine"};
    int acquired = 0;
    PyObject *result = NULL;
    (void)module;

    if (!PyArg_ParseTuple(args, "OOO:sine_cosine", &objects[0], &objects[1], &objects[2]))
        return NULL;
    for (; acquired < 3; acquired++) {
        if (get_buffer(objects[acquired], &views[acquired], acquired > 0, 1, 0, names[acquired]) < 0)
            goto done;
    }
    if (views[1].shape[0] != views[0].shape[0] || views[2].shape[0] != views[0].shape[0]) {
        PyErr_SetString(PyExc_ValueError, "x, sine and cosine must have the same length");
        goto done;
    }
    const double *x = views[0].buf;
    double *sine = views[1].buf, *cosine = views[2].buf;
    for (Py_ssize_t k = 0; k < views[0].shape[0]; k += LANES) {
        int lanes = views[0].shape[0] - k < LANES ? (int)(views[0].shape[0] - k) : LANES;
        vd s, c;
        sine_cosine(gather(x, 1, k, 0, lanes), &s, &c);
        for (int lane = 0; lane < lanes; lane++) {
            sine[k + lane] = s[lane];
            cosine[k + lane] = c[lane];
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < acquired; i++)
        PyBuffer_Release(&views[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"regressor", regressor, METH_VARARGS, regressor_doc},
    {"normal_equations", normal_equations, METH_VARARGS, normal_equations_doc},
    {"sine_cosine", sine_cosine_array, METH_VARARGS, sine_cosine_doc},
    {"one_sample", one_sample_new, METH_VARARGS, one_sample_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_regressor_kernel",
    "The joint-torque regressor of a serial arm of revolute and prismatic joints (see robot_dynid.model.regressor).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__regressor_kernel(void)
{
#ifdef HAVE_STREAMING_STORES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx"))
        stream_copy = stream_copy_avx;
#endif
    if (PyType_Ready(&one_sample_type) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_definition);
    if (module != NULL && PyModule_AddIntConstant(module, "MAX_JOINTS", MAX_JOINTS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

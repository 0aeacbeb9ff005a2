/* kdump._speedups: optional C fast paths for the loops that run once per batch, record or
 * index entry. Each function does the common, well-formed case only and hands anything unusual
 * back to the pure-Python code (kdump/format, kdump/checks), which stays the reference: it
 * produces every finding and error message. tests/test_speedups.py runs both on the same bytes.
 *
 * Every read is bounds-checked against the buffer the caller passed; nothing is written to it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#define HAVE_MADVISE 1
#define HAVE_CRC_SHARE 1
#endif

/* ------------------------------------------------------------------ big-endian reads */

static inline uint64_t be64(const uint8_t *p)
{
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
           ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
           ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}

static inline uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline int16_t be16s(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }
static inline int32_t be32s(const uint8_t *p) { return (int32_t)be32(p); }
static inline int64_t be64s(const uint8_t *p) { return (int64_t)be64(p); }

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* ------------------------------------------------------------------ CRC-32C (Castagnoli) */

#define CRC32C_POLY 0x82F63B78u /* reflected */
#define BLOCK_LEVELS 5
static const size_t BLOCKS[BLOCK_LEVELS] = {8192, 4096, 1024, 512, 128};

static uint32_t crc_table[8][256];
/* zeros[level][k][b]: the register after BLOCKS[level] zero bytes, from byte b at byte k */
static uint32_t zeros[BLOCK_LEVELS][4][256];
static int have_hw_crc;

/* Raw register update (no pre/post inversion), one byte at a time or eight at a time. */
static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint64_t w = load_le64(p) ^ crc;
        crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

/* The register after `n` zero bytes, from register `crc`: a linear map, so the CRC of three
 * blocks computed side by side joins as shift(shift(c0) ^ c1) ^ c2. */
static uint32_t shift_by_table(uint32_t (*table)[256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

/* GF(2) matrices of 32 columns: mat[i] is the image of bit i (as zlib's crc32_combine). */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (int i = 0; vec; i++, vec >>= 1)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int i = 0; i < 32; i++)
        square[i] = gf2_times(mat, mat[i]);
}

/* table[k][b]: the register after the zero bytes `basis` shifts by (basis[bit]: the image of
 * bit `bit`), from byte b at byte k. */
static void zeros_table(uint32_t (*table)[256], const uint32_t *basis)
{
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (b & (1 << i))
                    v ^= basis[8 * k + i];
            table[k][b] = v;
        }
}

/* The zeros tables of every BLOCKS size (powers of two), the register's shift by 2^j zero
 * bytes squared from that by one: a few thousand operations, where CRC-ing each basis
 * vector through the zero bytes took a start-up 2.5 M instructions (issue 45). */
static void zeros_init(void)
{
    uint32_t op[32], next[32];
    op[0] = CRC32C_POLY; /* one zero bit: shift right, the polynomial in where bit 0 was */
    for (int i = 1; i < 32; i++)
        op[i] = 1u << (i - 1);
    for (int bit = 1; bit < 8; bit *= 2) { /* 2, 4, 8 bits: one byte */
        gf2_square(next, op);
        memcpy(op, next, sizeof(op));
    }
    for (size_t bytes = 1; bytes <= BLOCKS[0]; bytes *= 2) {
        for (int level = 0; level < BLOCK_LEVELS; level++)
            if (BLOCKS[level] == bytes)
                zeros_table(zeros[level], op);
        gf2_square(next, op);
        memcpy(op, next, sizeof(op));
    }
}

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int n = 0; n < 256; n++)
            crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xff];
    zeros_init();
}

/* The processor's CRC-32C instructions: SSE4.2's crc32 on x86-64, the CRC extension's crc32c*
 * on ARMv8 (optional in 8.0, so asked of the kernel; the aarch64 wheels, issue 34). Both take
 * the reflected polynomial without inverting, 8 bytes little-endian at a time, so one code
 * serves both. HW_CRC_BUILT is what kdump --version names. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HW_CRC_BUILT "SSE4.2"
#define HW_CRC __attribute__((target("sse4.2")))
#define CRC_U64(c, v) _mm_crc32_u64((c), (v))
#define CRC_U32(c, v) _mm_crc32_u32((c), (v))
#define CRC_U16(c, v) _mm_crc32_u16((c), (v))
#define CRC_U8(c, v) _mm_crc32_u8((c), (v))
#define hw_crc_present() (__builtin_cpu_init(), __builtin_cpu_supports("sse4.2") != 0)
#elif defined(__aarch64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_acle.h>
#include <sys/auxv.h>
#define HW_CRC_BUILT "ARMv8"
#ifdef __clang__
#define HW_CRC __attribute__((target("crc")))
#else
#define HW_CRC __attribute__((target("+crc")))
#endif
#define CRC_U64(c, v) ((uint64_t)__crc32cd((uint32_t)(c), (v)))
#define CRC_U32(c, v) __crc32cw((c), (v))
#define CRC_U16(c, v) __crc32ch((c), (v))
#define CRC_U8(c, v) __crc32cb((c), (v))
#define HWCAP_CRC32_BIT (1UL << 7) /* HWCAP_CRC32 in the kernel's asm/hwcap.h */
#define hw_crc_present() ((getauxval(AT_HWCAP) & HWCAP_CRC32_BIT) != 0)
#endif

#ifdef HW_CRC_BUILT

/* SSE4.2's crc32 instruction has a latency of three cycles and a throughput of one (ARM's
 * crc32c much the same on current cores): three independent streams over three adjacent
 * blocks keep it busy, joined with the zeros tables. Long blocks stream from memory best; the
 * shorter ones serve what is left of a batch. */
HW_CRC static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c0 = crc;
    /* to an 8-byte boundary first: unaligned loads that straddle cache lines slow the loops */
    while (n && ((uintptr_t)p & 7)) {
        c0 = CRC_U8((uint32_t)c0, *p++);
        n--;
    }
    for (int level = 0; level < BLOCK_LEVELS; level++) {
        const size_t block = BLOCKS[level];
        while (n >= 3 * block) {
            uint64_t c1 = 0, c2 = 0;
            const uint8_t *end = p + block;
            do {
                c0 = CRC_U64(c0, load_le64(p));
                c1 = CRC_U64(c1, load_le64(p + block));
                c2 = CRC_U64(c2, load_le64(p + 2 * block));
                p += 8;
            } while (p < end);
            c0 = shift_by_table(zeros[level], (uint32_t)c0) ^ (uint32_t)c1;
            c0 = shift_by_table(zeros[level], (uint32_t)c0) ^ (uint32_t)c2;
            p += 2 * block;
            n -= 3 * block;
        }
    }
    while (n >= 8) {
        c0 = CRC_U64(c0, load_le64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = CRC_U8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}

/* Batches shorter than this are not aligned first: for ~100-byte batches (the usual on a
 * broker) the bytes taken one at a time to reach a boundary cost more than the loads save. */
#define ALIGN_FROM 256

/* The register after the last n < 8 bytes at p. */
HW_CRC static inline uint64_t tail_hw(uint64_t c, const uint8_t *p,
                                                                 size_t n)
{
    uint32_t v32;
    uint16_t v16;
    if (n & 4) {
        memcpy(&v32, p, 4);
        c = CRC_U32((uint32_t)c, v32);
        p += 4;
    }
    if (n & 2) {
        memcpy(&v16, p, 2);
        c = CRC_U16((uint32_t)c, v16);
        p += 2;
    }
    if (n & 1)
        c = CRC_U8((uint32_t)c, *p);
    return c;
}

/* Three CRC-32Cs at once, one per stream: three batches keep the instruction as busy as one
 * long buffer split in three, and need no joining. Each then finishes on its own. */
HW_CRC static void crc_hw3(const uint8_t *const p[3],
                                                     const size_t n[3], uint32_t out[3])
{
    uint64_t c0 = 0xFFFFFFFFu, c1 = 0xFFFFFFFFu, c2 = 0xFFFFFFFFu;
    const uint8_t *p0 = p[0], *p1 = p[1], *p2 = p[2];
    size_t l0 = n[0], l1 = n[1], l2 = n[2];
    size_t common = l0 < l1 ? l0 : l1;
    common = common < l2 ? common : l2;
    if (common >= ALIGN_FROM) {
        /* long batches: each stream first to an 8-byte boundary (a batch's CRC starts 21
         * bytes into it, and unaligned loads that straddle cache lines slow a long loop) */
        while ((uintptr_t)p0 & 7) {
            c0 = CRC_U8((uint32_t)c0, *p0++);
            l0--;
        }
        while ((uintptr_t)p1 & 7) {
            c1 = CRC_U8((uint32_t)c1, *p1++);
            l1--;
        }
        while ((uintptr_t)p2 & 7) {
            c2 = CRC_U8((uint32_t)c2, *p2++);
            l2--;
        }
        common = l0 < l1 ? l0 : l1;
        common = common < l2 ? common : l2;
    }
    common &= ~(size_t)7;
    for (size_t i = 0; i < common; i += 8) {
        c0 = CRC_U64(c0, load_le64(p0 + i));
        c1 = CRC_U64(c1, load_le64(p1 + i));
        c2 = CRC_U64(c2, load_le64(p2 + i));
    }
    p0 += common, p1 += common, p2 += common;
    l0 -= common, l1 -= common, l2 -= common;
    if ((l0 | l1 | l2) >= 8) { /* lengths that differ: the rest of each 8 bytes at a time */
        c0 = crc_hw((uint32_t)c0, p0, l0 & ~(size_t)7);
        c1 = crc_hw((uint32_t)c1, p1, l1 & ~(size_t)7);
        c2 = crc_hw((uint32_t)c2, p2, l2 & ~(size_t)7);
        p0 += l0 & ~(size_t)7, p1 += l1 & ~(size_t)7, p2 += l2 & ~(size_t)7;
        l0 &= 7, l1 &= 7, l2 &= 7;
    }
    /* the last 0-7 bytes of the three side by side, 4, 2 and 1 at a time: a short batch's
     * tail one byte at a time would cost as much as its body */
    c0 = tail_hw(c0, p0, l0);
    c1 = tail_hw(c1, p1, l1);
    c2 = tail_hw(c2, p2, l2);
    out[0] = ~(uint32_t)c0;
    out[1] = ~(uint32_t)c1;
    out[2] = ~(uint32_t)c2;
}
#endif

/* The CRC-32C of three buffers (the walk's batches, three at a time). */
static void crc32c_3(const uint8_t *const p[3], const size_t n[3], uint32_t out[3])
{
#ifdef HW_CRC_BUILT
    if (have_hw_crc) {
        crc_hw3(p, n, out);
        return;
    }
#endif
    for (int k = 0; k < 3; k++)
        out[k] = ~crc_sw(0xFFFFFFFFu, p[k], n[k]);
}

static uint32_t crc32c(const uint8_t *p, size_t n)
{
#ifdef HW_CRC_BUILT
    if (have_hw_crc)
        return ~crc_hw(0xFFFFFFFFu, p, n);
#endif
    return ~crc_sw(0xFFFFFFFFu, p, n);
}

/* ------------------------------------------------------------------ helpers */

/* A read-only view of a buffer argument, released by release_view(). */
static int get_view(PyObject *obj, Py_buffer *view)
{
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

static void release_view(Py_buffer *view) { PyBuffer_Release(view); }

/* How to make a tuple subclass (a NamedTuple): its tp_alloc, asked once per call (the stable
 * ABI has no field access), then called for each tuple of n items the caller fills. */
typedef struct {
    PyTypeObject *cls;
    allocfunc alloc;
} tuple_maker;

static tuple_maker tuple_maker_of(PyObject *cls)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    tuple_maker t = {type, (allocfunc)PyType_GetSlot(type, Py_tp_alloc)};
    return t;
}

static PyObject *new_tuple_of(const tuple_maker *t, Py_ssize_t n) { return t->alloc(t->cls, n); }

static int set_ll(PyObject *tuple, Py_ssize_t i, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL)
        return -1;
    PyTuple_SetItem(tuple, i, o);
    return 0;
}

static int check_type(PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a tuple subclass");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ named results */

/* What the functions hand back, as struct sequences (named tuples: read by name, or unpacked):
 * the module's WalkedRun, IndexPoints... of the same fields, declared in kdump/_speedups.pyi. */
enum {
    WALKED_RUN,
    CRC_SHARE_COUNTS,
    INDEX_POINTS,
    PACKED_ENTRIES,
    RECORD_ERROR,
    RENDERED_RUN,
    RENDERED_PAYLOAD,
    DEEP_CHECKED,
    GATHER_STATE,
    N_RESULTS
};

static PyStructSequence_Field walked_run_fields[] = {
    {"n", "batches walked"},
    {"columns", "their WALK_COLUMNS, n int64 values each, one after the other"},
    {"position", "where the next run starts"},
    {NULL, NULL},
};
static PyStructSequence_Field crc_share_counts_fields[] = {
    {"posted", "runs of CRC work the walk posted"},
    {"helped", "slices of them the helping thread checked"},
    {NULL, NULL},
};
static PyStructSequence_Field index_points_fields[] = {
    {"last_entry", "position of the last offset index entry made"},
    {"max_ts", "the greatest timestamp so far"},
    {"offset_of_max_ts", "the last offset of the batch that holds it"},
    {"offsets", "the new offset index entries' offsets (int64 bytes)"},
    {"positions", "their positions (int64 bytes)"},
    {"timestamps", "the new time index entries' timestamps (int64 bytes)"},
    {"time_offsets", "their offsets (int64 bytes)"},
    {NULL, NULL},
};
static PyStructSequence_Field packed_entries_fields[] = {
    {"data", "the entries, packed as the index file holds them"},
    {"entries", "how many"},
    {"last_first", "the last entry's first value (offset or timestamp)"},
    {"last_second", "the last entry's second value (position or offset)"},
    {NULL, NULL},
};
static PyStructSequence_Field record_error_fields[] = {
    {"record", "the number of the record that does not decode"},
    {"fault", "why: a RecordFault"},
    {"detail", "the first number its wording takes"},
    {"detail2", "the second"},
    {NULL, NULL},
};
static PyStructSequence_Field rendered_run_fields[] = {
    {"data", "the lines rendered"},
    {"next_index", "the batch of the run to go on from"},
    {"last_offset", "the last offset rendered"},
    {"gaps", "(last offset, next offset) pairs that do not follow each other"},
    {"invalid", "batches whose CRC fails"},
    {NULL, NULL},
};
static PyStructSequence_Field rendered_payload_fields[] = {
    {"data", "the lines rendered"},
    {"last_offset", "the last offset rendered"},
    {"gaps", "(last offset, next offset) pairs that do not follow each other"},
    {"position", "where in the payload the next call goes on"},
    {"next_record", "the record it goes on from (the batch's record count: done)"},
    {NULL, NULL},
};
static PyStructSequence_Field deep_checked_fields[] = {
    {"next_index", "the batch of the run the Python checks go on from"},
    {"records", "records counted"},
    {"flagged", "batches the Python checks must look at"},
    {NULL, NULL},
};

/* gather's state between two runs, read by name from the state handed in (the Python
 * reference's kdump.checks.gather.GatherState, or this type from the run before) */
enum {
    GS_CURSOR_P,
    GS_HAS_PREV,
    GS_PREV_LAST,
    GS_CURSOR_O,
    GS_BEFORE,
    GS_PROW_N,
    GS_OROW_N,
    GS_HAS_RAISED,
    GS_RAISED_BASE,
    GS_RAISED_LAST,
    GS_RAISED_MAX_TS,
    GS_RAISED_BEFORE,
    GS_RAISED_PREV_LAST,
    GS_RISING,
    N_GATHER_STATE
};
static PyStructSequence_Field gather_state_fields[N_GATHER_STATE + 1] = {
    [GS_CURSOR_P] = {"cursor_p", "the next wanted position"},
    [GS_HAS_PREV] = {"has_prev", "whether a batch came before (0 or 1)"},
    [GS_PREV_LAST] = {"prev_last", "its last offset"},
    [GS_CURSOR_O] = {"cursor_o", "the next wanted offset"},
    [GS_BEFORE] = {"before", "the greatest max timestamp so far"},
    [GS_PROW_N] = {"prow_n", "position rows filled"},
    [GS_OROW_N] = {"orow_n", "offset rows filled"},
    [GS_HAS_RAISED] = {"has_raised", "whether a batch raised the max timestamp"},
    [GS_RAISED_BASE] = {"raised_base", "the last such batch's base offset"},
    [GS_RAISED_LAST] = {"raised_last", "its last offset"},
    [GS_RAISED_MAX_TS] = {"raised_max_ts", "its max timestamp"},
    [GS_RAISED_BEFORE] = {"raised_before", "the max timestamp before it"},
    [GS_RAISED_PREV_LAST] = {"raised_prev_last", "the last offset before it (INT64_MIN: none)"},
    [GS_RISING] = {"rising", "whether every last offset so far rose"},
    [N_GATHER_STATE] = {NULL, NULL},
};
static PyObject *gather_state_names[N_GATHER_STATE]; /* interned, for the reads by name */

#define RESULT(name, doc, fields)                                                               \
    {"kdump._speedups." name, doc, fields, sizeof(fields) / sizeof(fields[0]) - 1}
static PyStructSequence_Desc result_descs[N_RESULTS] = {
    RESULT("WalkedRun", "walk_v2's run of batches", walked_run_fields),
    RESULT("CrcShareCounts", "CrcShare.counts()", crc_share_counts_fields),
    RESULT("IndexPoints", "index_points' new entries and state", index_points_fields),
    RESULT("PackedEntries", "pack_entries' index entries", packed_entries_fields),
    RESULT("RecordError", "the record v2_records stopped at", record_error_fields),
    RESULT("RenderedRun", "render_batches' lines", rendered_run_fields),
    RESULT("RenderedPayload", "render_payload's lines", rendered_payload_fields),
    RESULT("DeepChecked", "deep_check's count", deep_checked_fields),
    RESULT("GatherState", "gather's state between two runs", gather_state_fields),
};
#undef RESULT
static PyTypeObject *result_types[N_RESULTS];

/* A `which` result holding the values `format` builds (Py_BuildValue's "(...)"); NULL on
 * failure, the values' references released either way. */
static PyObject *named_result(int which, const char *format, ...)
{
    va_list va;
    va_start(va, format);
    PyObject *values = Py_VaBuildValue(format, va);
    va_end(va);
    if (values == NULL)
        return NULL;
    PyObject *out = PyStructSequence_New(result_types[which]);
    for (Py_ssize_t i = 0; out != NULL && i < PyTuple_Size(values); i++)
        PyStructSequence_SetItem(out, i, Py_NewRef(PyTuple_GetItem(values, i)));
    Py_DECREF(values);
    return out;
}

/* module.NAME for each result type */
static int add_result_types(PyObject *m)
{
    for (int i = 0; i < N_RESULTS; i++) {
        result_types[i] = PyStructSequence_NewType(&result_descs[i]);
        const char *name = strrchr(result_descs[i].name, '.') + 1;
        if (result_types[i] == NULL ||
            PyModule_AddObjectRef(m, name, (PyObject *)result_types[i]) < 0)
            return -1;
    }
    for (int i = 0; i < N_GATHER_STATE; i++)
        if ((gather_state_names[i] = PyUnicode_InternFromString(gather_state_fields[i].name)) ==
            NULL)
            return -1;
    return 0;
}

/* ------------------------------------------------------------------ crc32c(buf, start, end) */

static PyObject *crc32c_of(PyObject *obj, Py_ssize_t start, Py_ssize_t end)
{
    Py_buffer view;
    if (get_view(obj, &view) < 0)
        return NULL;
    /* buf[start:end], as slicing reads it: negative ends count from the end, nothing when
     * start is not before end */
    Py_ssize_t length = PySlice_AdjustIndices(view.len, &start, &end, 1);
    uint32_t crc = length > 0 ? crc32c((const uint8_t *)view.buf + start, (size_t)length)
                              : crc32c((const uint8_t *)"", 0);
    release_view(&view);
    return PyLong_FromUnsignedLong(crc);
}

static int hw_crc_usable; /* the processor has the instructions; have_hw_crc: they are used */

static PyObject *py_hardware_crc(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(have_hw_crc);
}

static PyObject *py_set_hardware_crc(PyObject *self, PyObject *on)
{
    int was = have_hw_crc, want = PyObject_IsTrue(on);
    if (want < 0)
        return NULL;
    have_hw_crc = want && hw_crc_usable;
    return PyBool_FromLong(was);
}

/* METH_FASTCALL: this runs once per batch, and argument tuples would cost a fifth of it. */
static PyObject *py_crc32c(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start = 0, end = PY_SSIZE_T_MAX;
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "crc32c(buf, start=0, end=len(buf))");
        return NULL;
    }
    if (nargs > 1 && (start = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 2 && (end = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    return crc32c_of(args[0], start, end);
}

/* ------------------------------------------------------------------ v2 batch headers */

/* Where the fields lie: a v2 batch header's, an index entry's. The same numbers as
 * kdump.format.layout, which exports them as LAYOUT beside the names (tests/test_speedups.py
 * compares the two). */
enum {
    LOG_OVERHEAD = 12,
    BASE_OFFSET_AT = 0,
    BATCH_LENGTH_AT = 8,
    PARTITION_LEADER_EPOCH_AT = 12,
    MAGIC_AT = 16,
    CRC_AT = 17,
    ATTRIBUTES_AT = 21,
    LAST_OFFSET_DELTA_AT = 23,
    BASE_TIMESTAMP_AT = 27,
    MAX_TIMESTAMP_AT = 35,
    PRODUCER_ID_AT = 43,
    PRODUCER_EPOCH_AT = 51,
    BASE_SEQUENCE_AT = 53,
    RECORDS_COUNT_AT = 57,
    V2_HEADER_SIZE = 61,
    MIN_V2_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD,
    OFFSET_INDEX_ENTRY = 8,  /* relative offset int32, position int32 */
    OFFSET_INDEX_POSITION_AT = 4,
    TIME_INDEX_ENTRY = 12,   /* timestamp int64, relative offset int32 */
    TIME_INDEX_OFFSET_AT = 8,
};

static const struct {
    const char *name;
    int value;
} layout[] = {
    {"LOG_OVERHEAD", LOG_OVERHEAD},
    {"base_offset", BASE_OFFSET_AT},
    {"batch_length", BATCH_LENGTH_AT},
    {"partition_leader_epoch", PARTITION_LEADER_EPOCH_AT},
    {"magic", MAGIC_AT},
    {"crc", CRC_AT},
    {"attributes", ATTRIBUTES_AT},
    {"last_offset_delta", LAST_OFFSET_DELTA_AT},
    {"base_timestamp", BASE_TIMESTAMP_AT},
    {"max_timestamp", MAX_TIMESTAMP_AT},
    {"producer_id", PRODUCER_ID_AT},
    {"producer_epoch", PRODUCER_EPOCH_AT},
    {"base_sequence", BASE_SEQUENCE_AT},
    {"records_count", RECORDS_COUNT_AT},
    {"RECORD_BATCH_OVERHEAD", V2_HEADER_SIZE},
    {"MIN_V2_BATCH_LENGTH", MIN_V2_BATCH_LENGTH},
    {"OFFSET_INDEX_ENTRY", OFFSET_INDEX_ENTRY},
    {"OFFSET_INDEX_POSITION_AT", OFFSET_INDEX_POSITION_AT},
    {"TIME_INDEX_ENTRY", TIME_INDEX_ENTRY},
    {"TIME_INDEX_OFFSET_AT", TIME_INDEX_OFFSET_AT},
};

typedef struct {
    int64_t base_offset;
    int32_t batch_length, partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp, max_timestamp, producer_id;
    int16_t producer_epoch;
    int32_t base_sequence, records_count;
} v2_header;

static void read_v2_header(const uint8_t *p, v2_header *h)
{
    h->base_offset = be64s(p + BASE_OFFSET_AT);
    h->batch_length = be32s(p + BATCH_LENGTH_AT);
    h->partition_leader_epoch = be32s(p + PARTITION_LEADER_EPOCH_AT);
    h->magic = (int8_t)p[MAGIC_AT];
    h->crc = be32(p + CRC_AT);
    h->attributes = be16s(p + ATTRIBUTES_AT);
    h->last_offset_delta = be32s(p + LAST_OFFSET_DELTA_AT);
    h->base_timestamp = be64s(p + BASE_TIMESTAMP_AT);
    h->max_timestamp = be64s(p + MAX_TIMESTAMP_AT);
    h->producer_id = be64s(p + PRODUCER_ID_AT);
    h->producer_epoch = be16s(p + PRODUCER_EPOCH_AT);
    h->base_sequence = be32s(p + BASE_SEQUENCE_AT);
    h->records_count = be32s(p + RECORDS_COUNT_AT);
}

/* The length of the well-formed v2 batch at pos (header included), or 0 where iteration
 * needs the Python path: too little left for a header, another magic, a length below the
 * header or above max_size, a batch running past end. */
static Py_ssize_t v2_batch_size(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end,
                                long long max_size)
{
    if (end - pos < V2_HEADER_SIZE || buf[pos + MAGIC_AT] != 2)
        return 0;
    int32_t length = be32s(buf + pos + BATCH_LENGTH_AT);
    if (length < MIN_V2_BATCH_LENGTH || length > max_size)
        return 0;
    if ((long long)length + LOG_OVERHEAD > end - pos)
        return 0;
    return (Py_ssize_t)length + LOG_OVERHEAD;
}

/* ------------------------------------------------------------------ index merge walks */

/* A read-only int64 column: an array('q') or any buffer of native int64s. */
static int get_column(PyObject *obj, Py_buffer *view, const int64_t **data, Py_ssize_t *n)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL ||
        (strcmp(view->format, "q") != 0 && strcmp(view->format, "l") != 0) ||
        (view->len > 0 && (uintptr_t)view->buf % sizeof(int64_t) != 0)) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "expected an aligned array of signed 64-bit integers");
        return -1;
    }
    *data = view->buf;
    *n = view->len / 8;
    return 0;
}

/* get_column() of `count` objects; on failure none is held. *n is the shortest length. */
static int get_columns(PyObject **objs, Py_buffer *views, const int64_t **data, int count,
                       Py_ssize_t *n)
{
    for (int i = 0; i < count; i++) {
        Py_ssize_t len;
        if (get_column(objs[i], &views[i], &data[i], &len) < 0) {
            while (i--)
                PyBuffer_Release(&views[i]);
            return -1;
        }
        if (i == 0 || len < *n)
            *n = len;
    }
    return 0;
}

static void release_columns(Py_buffer *views, int count)
{
    for (int i = 0; i < count; i++)
        PyBuffer_Release(&views[i]);
}

static int append_index(PyObject *list, Py_ssize_t i)
{
    PyObject *o = PyLong_FromSsize_t(i);
    int rc = o == NULL ? -1 : PyList_Append(list, o);
    Py_XDECREF(o);
    return rc;
}

/* ------------------------------------------------------------------ the walk */

/* The columns of kdump.format.walk.COLUMNS, in that order (checked there at import). */
#define WALK_COLUMNS 16
static const char *const walk_column_names[WALK_COLUMNS] = {
    "position",      "base_offset",       "last_offset",    "size",
    "partition_leader_epoch", "magic",    "crc",            "attributes",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
    "producer_epoch", "base_sequence",    "records_count",  "valid",
};

/* The header pass's loads form a chain (each batch's length says where the next header
 * is), so each one waited for its bytes; the batches lie one after the other, so the bytes
 * 4 KiB ahead (32 small batches) are asked for before the chain reaches them (the pass over a
 * GiB of 127-byte batches, with the column stores below: 115 ms of CPU without, 95 with
 * 1 KiB ahead, 63-70 with 4 KiB, 57-59 with 16 KiB). A prefetch past the buffer's end, or of a page not mapped yet,
 * does not fault. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define PREFETCH(p) ((void)(p))
#endif
#define PREFETCH_AHEAD 4096
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SPIN_PAUSE() __asm__ __volatile__("yield")
#else
#define SPIN_PAUSE() ((void)0)
#endif

/* Values between one column's room and the next in a full run's bytes: a run of 4096 (or
 * 32768) makes columns 32 KiB (256 KiB) apart, the same L1 set for all 16, so the header
 * pass's 16 stores a batch evicted each other's lines; a cache line more between them puts
 * each in a set of its own. */
#define COLUMN_PAD 8

/* valid[i] for batches lo..hi-1 of a run: whether each one's CRC-32C (from its attributes to
 * its end) is the stored one; three batches at a time, the loop's streams interleaved. How
 * many are not. */
static Py_ssize_t check_crcs(const uint8_t *buf, const int64_t *positions,
                             const int64_t *sizes, const int64_t *stored, int64_t *valid,
                             Py_ssize_t lo, Py_ssize_t hi)
{
    Py_ssize_t failed = 0;
    for (Py_ssize_t i = lo; i < hi; i += 3) {
        const uint8_t *p[3];
        size_t len[3];
        uint32_t crc[3];
        for (int k = 0; k < 3; k++) {
            Py_ssize_t j = i + k < hi ? i + k : i; /* past the end: batch i again */
            p[k] = buf + positions[j] + ATTRIBUTES_AT;
            len[k] = (size_t)(sizes[j] - ATTRIBUTES_AT);
        }
        crc32c_3(p, len, crc);
        for (int k = 0; k < 3 && i + k < hi; k++) {
            valid[i + k] = (int64_t)crc[k] == stored[i + k];
            failed += !valid[i + k];
        }
    }
    return failed;
}

#ifdef HAVE_CRC_SHARE
/* CrcShare: a walk's CRCs shared with its read-ahead thread (kdump.format.walk.ReadAhead).
 * Where the pages are cheap to map (the page cache holds the log in 2 MiB folios) the
 * read-ahead has little to do and the CRC is half the walk's time; walk_v2 then opens its run
 * here before its header pass and publishes the headers as it reads them, a block at a time,
 * so the thread checks the CRCs of one block while the walk reads the next: for ~100-byte
 * batches the header pass and the CRCs each take about as long, and the run's CRCs are all
 * but done when its headers are. At the run's end walk_v2 checks what the thread has not
 * taken and returns once every slice is done. Who checks a batch changes no verdict. The
 * thread takes CRC work only when it is not paging in: `help` (without the GIL) checks the
 * slices published, run after run, until a `kick` (the walk moved on: maybe a window to page
 * in) or `close`. Slices are taken under the lock, so a slice of one run is never mistaken
 * for a slice of the next. */
typedef struct {
    PyObject_HEAD
    pthread_mutex_t lock;
    pthread_cond_t changed;
    const uint8_t *buf;
    const int64_t *positions, *sizes, *stored;
    int64_t *valid;
    /* published, taken and checked batches of the open run; with kicks and closed, read
     * without the lock while the thread waits awake (share_spin), so written atomically */
    Py_ssize_t n, next, done;
    Py_ssize_t failed;        /* of those checked, the CRCs that failed */
    int open;                 /* a walk's run is open (buf may be NULL: an empty buffer) */
    int ended;                /* the run's headers are all published: n is its length */
    int waiting;              /* the thread waits in help: a publish wakes it */
    unsigned long long kicks, posted, helped;
    int closed;
} CrcShare;

/* Headers published to the thread at a time (and a slice of CRC work: the batches starting
 * within this many bytes of its first): ~9 us of CRC, a thirty-second of a run of 32768 small
 * batches (4 MiB). Each publish and each slice takes the share's lock; at 32 KiB the two
 * threads met on it often enough that the walk slept on it (a GiB of 127-byte batches read
 * back: 0.26 s against 0.15 s alone, 0.12 s at 128 KiB). */
#define SHARE_BLOCK_BYTES (128 << 10)

/* How long a thread waits for the other awake before it sleeps (see share_spin, share_end). */
#define SHARE_SPIN_NS 200000

/* How far behind the header pass the thread checks CRCs. Bytes the walk has just read sit in
 * its core's L2; the thread's reads of them there (AMD EPYC: each a probe of that core) slowed
 * the header pass by half (a GiB of 127-byte batches read back: 0.26 s against 0.14 s with
 * the thread 512 KiB behind). The last LAG bytes of a run both threads check at its end. */
#define SHARE_LAG_BYTES (512 << 10)

/* Nanoseconds from t0 to t (in 64 bits: a 32-bit long overflows after 2 s). */
static int64_t elapsed_ns(const struct timespec *t0, const struct timespec *t)
{
    return ((int64_t)t->tv_sec - (int64_t)t0->tv_sec) * 1000000000 + (t->tv_nsec - t0->tv_nsec);
}

/* A field share_spin reads without the lock, written (under it) so that read is no race. */
#define SHARE_SET(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELEASE)

/* The first batch in [lo, hi] that starts at or past `at` (hi: none does). */
static Py_ssize_t first_at(const int64_t *positions, Py_ssize_t lo, Py_ssize_t hi, int64_t at)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (positions[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The end of a slice from batch lo: batches up to SHARE_BLOCK_BYTES of bytes (one at least),
 * no further than hi. */
static Py_ssize_t slice_end(const int64_t *positions, Py_ssize_t lo, Py_ssize_t hi)
{
    return first_at(positions, lo + 1, hi, positions[lo] + SHARE_BLOCK_BYTES);
}

/* Take and check slices of the published batches until none is left (lock held on entry and
 * exit); `helper`: the thread's calls, counted in `helped`. */
static void share_work(CrcShare *sh, int helper)
{
    while (sh->next < sh->n) {
        sh->helped += (unsigned long long)helper;
        const uint8_t *buf = sh->buf;
        const int64_t *positions = sh->positions, *sizes = sh->sizes, *stored = sh->stored;
        int64_t *valid = sh->valid;
        Py_ssize_t lo = sh->next, hi = slice_end(positions, lo, sh->n);
        SHARE_SET(sh->next, hi);
        pthread_mutex_unlock(&sh->lock);
        Py_ssize_t failed = check_crcs(buf, positions, sizes, stored, valid, lo, hi);
        pthread_mutex_lock(&sh->lock);
        SHARE_SET(sh->done, sh->done + (hi - lo));
        sh->failed += failed;
        if (sh->ended && sh->done == sh->n)
            pthread_cond_broadcast(&sh->changed);
    }
}

/* walk_v2's side, before its header pass: open a run (its columns: rows published later). 0
 * where another walk's run is open (two walks given one share): the caller checks its own
 * CRCs, for a run opened over another would let that walk return, and free its buffer, while
 * the thread still reads it. */
static int share_open(CrcShare *sh, const uint8_t *buf, const int64_t *positions,
                      const int64_t *sizes, const int64_t *stored, int64_t *valid)
{
    pthread_mutex_lock(&sh->lock);
    if (sh->open) {
        pthread_mutex_unlock(&sh->lock);
        return 0;
    }
    sh->open = 1;
    sh->buf = buf;
    sh->positions = positions;
    sh->sizes = sizes;
    sh->stored = stored;
    sh->valid = valid;
    SHARE_SET(sh->n, 0);
    SHARE_SET(sh->next, 0);
    SHARE_SET(sh->done, 0);
    sh->failed = 0;
    sh->ended = 0;
    sh->posted++;
    pthread_mutex_unlock(&sh->lock);
    return 1;
}

/* The headers of the open run's first n batches are in its columns, and the walk has gone
 * SHARE_LAG_BYTES past their starts: the thread may check them. */
static void share_publish(CrcShare *sh, Py_ssize_t n)
{
    pthread_mutex_lock(&sh->lock);
    SHARE_SET(sh->n, n);
    if (sh->waiting)
        pthread_cond_broadcast(&sh->changed);
    pthread_mutex_unlock(&sh->lock);
}

/* The run has n batches: check what the thread has not taken, wait for its last slice, close
 * the run; how many CRCs failed. */
static Py_ssize_t share_end(CrcShare *sh, Py_ssize_t n)
{
    pthread_mutex_lock(&sh->lock);
    SHARE_SET(sh->n, n);
    sh->ended = 1;
    if (sh->waiting) /* asleep: woken, it takes slices of the tail with the walk */
        pthread_cond_broadcast(&sh->changed);
    share_work(sh, 0);
    /* what is left is the thread's slice in hand (a block's CRC, ~9 us): waited for awake,
     * as a sleep and a wake cost more than that (on a virtual machine several times more:
     * a GiB of 127-byte batches, 257 sleeps, 0.25 s against 0.12 s) */
    Py_ssize_t want = sh->n;
    pthread_mutex_unlock(&sh->lock);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE) < want) {
        SPIN_PAUSE();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (elapsed_ns(&t0, &t) > SHARE_SPIN_NS)
            break; /* the thread lost its CPU: sleep till it is done */
    }
    pthread_mutex_lock(&sh->lock);
    while (sh->done < sh->n)
        pthread_cond_wait(&sh->changed, &sh->lock);
    Py_ssize_t failed = sh->failed;
    /* nothing open: the run's columns are about to go */
    SHARE_SET(sh->n, 0);
    SHARE_SET(sh->next, 0);
    SHARE_SET(sh->done, 0);
    sh->buf = NULL;
    sh->open = 0;
    pthread_mutex_unlock(&sh->lock);
    return failed;
}

static PyObject *share_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    CrcShare *sh = (CrcShare *)PyType_GenericAlloc(type, 0);
    if (sh == NULL)
        return NULL;
    if (pthread_mutex_init(&sh->lock, NULL) != 0 || pthread_cond_init(&sh->changed, NULL) != 0) {
        Py_DECREF(sh);
        return PyErr_NoMemory();
    }
    return (PyObject *)sh;
}

static void share_dealloc(CrcShare *sh)
{
    pthread_cond_destroy(&sh->changed);
    pthread_mutex_destroy(&sh->lock);
    PyTypeObject *type = Py_TYPE((PyObject *)sh);
    PyObject_Free(sh);
    Py_DECREF(type); /* a heap type: each instance holds a reference to it */
}

/* A sleeping thread wakes tens of microseconds after a publish (longer on a virtual machine),
 * as long as the header pass of a run of small batches takes: a thread that slept between
 * runs would find each run's CRCs done by the walk. So it first waits awake a while (lock
 * held on entry and exit, released meanwhile), yielding its CPU to any other thread that
 * wants it, until work, a kick or close comes. */
static void share_spin(CrcShare *sh, unsigned long long seen)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_unlock(&sh->lock);
    /* read without the lock (atomic loads of fields written atomically): a stale value only
     * ends the wait late; what it finds is decided again under the lock */
    while (__atomic_load_n(&sh->n, __ATOMIC_RELAXED) <=
               __atomic_load_n(&sh->next, __ATOMIC_RELAXED) &&
           __atomic_load_n(&sh->kicks, __ATOMIC_RELAXED) == seen &&
           !__atomic_load_n(&sh->closed, __ATOMIC_RELAXED)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (elapsed_ns(&t0, &t) > SHARE_SPIN_NS)
            break;
    }
    pthread_mutex_lock(&sh->lock);
}

/* help(kicks) -> whether it checked CRCs: checks the slices of the runs published until the
 * kicks count differs from `kicks` or the share is closed. */
static PyObject *share_help(CrcShare *sh, PyObject *arg)
{
    unsigned long long seen = PyLong_AsUnsignedLongLong(arg);
    if (seen == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    int worked = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&sh->lock);
    /* published headers are checked as they come, run after run, in here: a return to
     * Python between two blocks would cost as much as the block */
    int spun = 0;
    while (!sh->closed && sh->kicks == seen) {
        if (sh->next < sh->n) {
            share_work(sh, 1);
            worked = 1;
            continue;
        }
        if (!spun) { /* then the conditions again, under the lock: a close while it spun */
            spun = 1;
            share_spin(sh, seen);
            continue;
        }
        sh->waiting = 1;
        pthread_cond_wait(&sh->changed, &sh->lock);
        sh->waiting = 0;
        spun = 0;
    }
    pthread_mutex_unlock(&sh->lock);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(worked);
}

static PyObject *share_kicks(CrcShare *sh, PyObject *unused)
{
    pthread_mutex_lock(&sh->lock);
    unsigned long long kicks = sh->kicks;
    pthread_mutex_unlock(&sh->lock);
    return PyLong_FromUnsignedLongLong(kicks);
}

static PyObject *share_counts(CrcShare *sh, PyObject *unused)
{
    pthread_mutex_lock(&sh->lock);
    unsigned long long posted = sh->posted, helped = sh->helped;
    pthread_mutex_unlock(&sh->lock);
    return named_result(CRC_SHARE_COUNTS, "(KK)", posted, helped);
}

static PyObject *share_kick(CrcShare *sh, PyObject *unused)
{
    pthread_mutex_lock(&sh->lock);
    SHARE_SET(sh->kicks, sh->kicks + 1);
    pthread_cond_broadcast(&sh->changed);
    pthread_mutex_unlock(&sh->lock);
    Py_RETURN_NONE;
}

static PyObject *share_close(CrcShare *sh, PyObject *unused)
{
    pthread_mutex_lock(&sh->lock);
    SHARE_SET(sh->closed, 1);
    pthread_cond_broadcast(&sh->changed);
    pthread_mutex_unlock(&sh->lock);
    Py_RETURN_NONE;
}

static PyMethodDef share_methods[] = {
    {"help", (PyCFunction)share_help, METH_O,
     "help(kicks) -> bool: check CRCs of the runs published until a kick or close"},
    {"kicks", (PyCFunction)share_kicks, METH_NOARGS, "kicks() -> the kicks so far"},
    {"counts", (PyCFunction)share_counts, METH_NOARGS,
     "counts() -> CrcShareCounts(posted: runs posted, helped: slices the helping thread "
     "checked)"},
    {"kick", (PyCFunction)share_kick, METH_NOARGS, "kick(): wake a thread waiting in help"},
    {"close", (PyCFunction)share_close, METH_NOARGS, "close(): help returns, now and after"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot share_slots[] = {
    {Py_tp_doc, "A walk's CRC work shared with its read-ahead thread."},
    {Py_tp_new, share_new},
    {Py_tp_dealloc, share_dealloc},
    {Py_tp_methods, share_methods},
    {0, NULL},
};

static PyType_Spec share_spec = {
    "kdump._speedups.CrcShare", sizeof(CrcShare), 0, Py_TPFLAGS_DEFAULT, share_slots,
};

static PyTypeObject *CrcShareType; /* made from share_spec when the module loads */
#endif

/* The attribute bits a run's batches are counted by (kdump.format.layout). */
#define TRANSACTIONAL_OR_CONTROL 0x30
#define DELETE_HORIZON_BIT 0x40

/* What the header pass sees of a run's batches in passing (its loads wait on memory: these
 * cost nothing there, a pass over the columns each after): see columns_facts. */
typedef struct {
    Py_ssize_t n, transactional, delete_horizon, producer_batches, failed_crcs;
    int64_t least_max_timestamp, greatest_max_timestamp;
    int64_t records; /* the batches' records_count summed (verify's records without --deep) */
    int plain; /* each batch after the first follows the one before: its base offset the
                  last offset before plus one, its epoch the same, its last offset not
                  below its base */
} RunFacts;

/* RunColumns: a run's columns, read through the buffer protocol (kdump.format.walk.BatchRun
 * views them). A run of small batches is megabytes of columns; as bytes, freed and asked
 * for again a run later, glibc's heap handed such a block back to the kernel and took it
 * again every run (a fresh process verifying a GiB of 127-byte batches in runs of 16384:
 * 138,000 page faults, a third of its time in the kernel). The last block freed is kept for
 * the next run here. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;     /* the buffer's length */
    Py_ssize_t capacity; /* the block's (a reused block may be longer) */
    RunFacts facts;
} RunColumns;

/* The facts of one more batch, after `f->n` others whose last offset was `prev_last` and
 * epoch `prev_epoch`. */
static inline void facts_add(RunFacts *f, int64_t base, int64_t last, int64_t epoch,
                             int64_t attributes, int64_t max_ts, int64_t producer_id,
                             int64_t records, int64_t prev_last, int64_t prev_epoch)
{
    f->records += records > 0 ? records : 0; /* a count below 0 holds none */
    f->transactional += (attributes & TRANSACTIONAL_OR_CONTROL) != 0;
    f->delete_horizon += (attributes & DELETE_HORIZON_BIT) != 0;
    f->producer_batches += producer_id >= 0;
    f->least_max_timestamp = max_ts < f->least_max_timestamp ? max_ts : f->least_max_timestamp;
    f->greatest_max_timestamp =
        max_ts > f->greatest_max_timestamp ? max_ts : f->greatest_max_timestamp;
    f->plain &= last >= base &&
                (f->n == 0 || (base > prev_last && base - 1 == prev_last && epoch == prev_epoch));
    f->n++;
}

static const RunFacts NO_FACTS = {0, 0, 0, 0, 0, INT64_MAX, INT64_MIN, 0, 1};

static PyTypeObject *RunColumnsType; /* made from columns_spec when the module loads */
static char *spare_columns;          /* a freed run's block (the GIL guards it) */
static Py_ssize_t spare_size;

static RunColumns *columns_new(Py_ssize_t size)
{
    RunColumns *c = (RunColumns *)PyType_GenericAlloc(RunColumnsType, 0);
    if (c == NULL)
        return NULL;
    if (spare_columns != NULL && spare_size >= size && spare_size / 2 <= size) {
        c->data = spare_columns;
        c->capacity = spare_size;
        spare_columns = NULL;
    } else {
        c->data = malloc(size > 0 ? (size_t)size : 1);
        c->capacity = size;
        if (c->data == NULL) {
            Py_DECREF(c);
            return (RunColumns *)PyErr_NoMemory();
        }
    }
    c->size = size;
    c->facts = NO_FACTS;
    return c;
}

/* The facts of a run's first n batches from its columns (`stride` values apart). */
static void columns_count(RunColumns *c, const int64_t *cols, Py_ssize_t stride, Py_ssize_t n,
                          Py_ssize_t failed_crcs)
{
    const int64_t *bases = cols + stride, *lasts = cols + 2 * stride, *epochs = cols + 4 * stride,
                  *attributes = cols + 7 * stride, *max_ts = cols + 10 * stride,
                  *producer_ids = cols + 11 * stride, *counts = cols + 14 * stride;
    c->facts = NO_FACTS;
    for (Py_ssize_t i = 0; i < n; i++)
        facts_add(&c->facts, bases[i], lasts[i], epochs[i], attributes[i], max_ts[i],
                  producer_ids[i], counts[i], i ? lasts[i - 1] : 0, i ? epochs[i - 1] : 0);
    c->facts.failed_crcs = failed_crcs;
}

/* facts -> kdump.format.walk.RunFacts' values, or None for a run of none. */
static PyObject *columns_facts(RunColumns *c, void *closure)
{
    const RunFacts *f = &c->facts;
    if (f->n == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(LLnnnNnL)", (long long)f->least_max_timestamp,
                         (long long)f->greatest_max_timestamp, f->transactional,
                         f->delete_horizon, f->producer_batches, PyBool_FromLong(f->plain),
                         f->failed_crcs, (long long)f->records);
}

static PyGetSetDef columns_getset[] = {
    {"facts", (getter)columns_facts, NULL,
     "(least max timestamp, greatest max timestamp, transactional or control batches, "
     "batches with a delete horizon, batches with a producer id, plain, failed CRCs, records "
     "the headers count) of the run's batches (kdump.format.walk.RunFacts); None for none",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static void columns_dealloc(RunColumns *c)
{
    if (c->data != NULL) {
        if (spare_columns == NULL || spare_size < c->capacity) {
            free(spare_columns);
            spare_columns = c->data;
            spare_size = c->capacity;
        } else
            free(c->data);
    }
    PyTypeObject *type = Py_TYPE((PyObject *)c);
    PyObject_Free(c);
    Py_DECREF(type);
}

static int columns_getbuffer(RunColumns *c, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)c, c->data, c->size, 1, flags);
}

/* Equal where the bytes are (a run walked twice compares equal). */
static PyObject *columns_richcompare(RunColumns *a, PyObject *other, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, RunColumnsType))
        Py_RETURN_NOTIMPLEMENTED;
    RunColumns *b = (RunColumns *)other;
    int equal = a->size == b->size && memcmp(a->data, b->data, (size_t)a->size) == 0;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

/* __buffer__(flags) -> memoryview: PEP 688's name for the buffer protocol, which 3.12 gives
 * a type with the slot (here for 3.11, and for the stub that types it as a buffer). */
static PyObject *columns_buffer(RunColumns *c, PyObject *flags)
{
    return PyMemoryView_FromObject((PyObject *)c);
}

static PyMethodDef columns_methods[] = {
    {"__buffer__", (PyCFunction)columns_buffer, METH_O,
     "__buffer__(flags) -> memoryview of the columns"},
    {NULL, NULL, 0, NULL},
};

static Py_ssize_t columns_length(RunColumns *c) { return c->size; }

static PyType_Slot columns_slots[] = {
    {Py_tp_methods, columns_methods},
    {Py_tp_getset, columns_getset},
    {Py_sq_length, columns_length},
    {Py_tp_doc, "A run's int64 columns (walk_v2), read through the buffer protocol."},
    {Py_tp_dealloc, columns_dealloc},
    {Py_tp_richcompare, columns_richcompare},
    {Py_bf_getbuffer, columns_getbuffer},
    {0, NULL},
};

static PyType_Spec columns_spec = {
    "kdump._speedups.RunColumns", sizeof(RunColumns), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, /* walk_v2 makes them */
    columns_slots,
};

/* walk_v2(buf, start, stop, end, max_size, limit, check_crc, until_invalid[, share])
 *   -> WalkedRun(n, columns, position: where the next run starts)
 * The C side of kdump.format.walk.LogWalk: up to `limit` consecutive well-formed v2 batches
 * from `start` that start before `stop`, as int64 columns (one RunColumns block, column after
 * column, each with room for len(columns) / (8 * WALK_COLUMNS) values, its first n the
 * run's: n apart where the run ends short of `limit`). It stops, leaving the decision to the Python reference, at 17 bytes
 * or fewer left, another magic, a batch_length below the header or above max_size, a batch
 * running past `end`, and (with until_invalid) a batch whose CRC-32C fails. `valid` is 1 or
 * 0, or -1 without check_crc.
 * A CrcShare (`share`, or None) lets the walk's read-ahead thread check some of the CRCs. */
static PyObject *py_walk_v2(PyObject *self, PyObject *args)
{
    PyObject *obj, *share = Py_None;
    Py_ssize_t start, stop, end, limit;
    long long max_size;
    int check_crc, until_invalid;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnnLnpp|O", &obj, &start, &stop, &end, &max_size, &limit,
                          &check_crc, &until_invalid, &share))
        return NULL;
#ifdef HAVE_CRC_SHARE
    if (share != Py_None && !PyObject_TypeCheck(share, CrcShareType)) {
        PyErr_SetString(PyExc_TypeError, "share: a CrcShare or None");
        return NULL;
    }
#else
    share = Py_None;
#endif
    if (get_view(obj, &view) < 0)
        return NULL;
    if (end > view.len)
        end = view.len;
    if (stop > end)
        stop = end;
    /* no more batches than whole headers fit before stop: the columns stay bounded */
    Py_ssize_t room = stop > start && start >= 0 ? (stop - start) / V2_HEADER_SIZE + 1 : 0;
    if (limit < 0)
        limit = 0;
    if (limit > room)
        limit = room;
    /* the columns are written where Python gets them, `stride` values apart: a full run
     * (small batches) is handed over without a copy, a short one copied n apart */
    Py_ssize_t stride = limit + COLUMN_PAD;
    Py_ssize_t row_bytes = WALK_COLUMNS * (Py_ssize_t)sizeof(int64_t);
    RunColumns *data = columns_new(row_bytes * stride);
    if (data == NULL) {
        release_view(&view);
        return NULL;
    }
    int64_t *cols = (int64_t *)data->data;
    const uint8_t *buf = view.buf;
    Py_ssize_t pos = start < 0 ? end : start, n = 0;
    RunFacts facts = NO_FACTS;
    int64_t prev_last = 0, prev_epoch = 0;
    Py_ssize_t counted = 0, failed_crcs = 0;
    /* Without the GIL from here: the view keeps the buffer alive, and the columns are this
     * call's own (Python holds no reference to them yet; the read-ahead thread reads them and
     * the buffer through the share, and is done with both before share_end returns), so the
     * thread (kdump.format.walk.ReadAhead) can fault in the next window meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    /* the headers first, then the CRCs of the batches three at a time: with a share, the
     * thread's as the headers are published, the rest the walk's */
    int64_t *positions = cols, *sizes = cols + 3 * stride, *stored = cols + 6 * stride,
            *valid = cols + 15 * stride;
    CrcShare *shared = NULL;
    Py_ssize_t published = pos, ready = 0;
#ifdef HAVE_CRC_SHARE
    if (check_crc && share != Py_None &&
        share_open((CrcShare *)share, buf, positions, sizes, stored, valid))
        shared = (CrcShare *)share;
#endif
    while (n < limit && pos < stop) {
#ifdef HAVE_CRC_SHARE
        if (shared != NULL && pos - published >= SHARE_BLOCK_BYTES) {
            Py_ssize_t behind = first_at(positions, ready, n, (int64_t)pos - SHARE_LAG_BYTES);
            if (behind > ready) /* else nothing new for the thread: no lock, no wake */
                share_publish(shared, ready = behind);
            published = pos;
        }
#endif
        Py_ssize_t size = v2_batch_size(buf, pos, end, max_size);
        if (size == 0)
            break;
        if (size < PREFETCH_AHEAD) /* past a large batch, the CRC brings the bytes in */
            PREFETCH(buf + pos + PREFETCH_AHEAD);
        v2_header h;
        read_v2_header(buf + pos, &h);
        int64_t *row = cols + n; /* value c of this batch at row[c * stride] */
        row[0] = pos;
        row[stride] = h.base_offset;
        row[2 * stride] =
            (int64_t)((uint64_t)h.base_offset + (uint64_t)(int64_t)h.last_offset_delta);
        row[3 * stride] = size;
        row[4 * stride] = h.partition_leader_epoch;
        row[5 * stride] = h.magic;
        row[6 * stride] = h.crc;
        row[7 * stride] = h.attributes;
        row[8 * stride] = h.last_offset_delta;
        row[9 * stride] = h.base_timestamp;
        row[10 * stride] = h.max_timestamp;
        row[11 * stride] = h.producer_id;
        row[12 * stride] = h.producer_epoch;
        row[13 * stride] = h.base_sequence;
        row[14 * stride] = h.records_count;
        row[15 * stride] = -1;
        facts_add(&facts, h.base_offset, row[2 * stride], h.partition_leader_epoch, h.attributes,
                  h.max_timestamp, h.producer_id, h.records_count, prev_last, prev_epoch);
        prev_last = row[2 * stride], prev_epoch = h.partition_leader_epoch;
        pos += size;
        n++;
    }
    counted = n; /* the batches the facts above are of */
    if (check_crc) {
#ifdef HAVE_CRC_SHARE
        if (shared != NULL)
            failed_crcs = share_end(shared, n);
        else
#endif
            failed_crcs = check_crcs(buf, positions, sizes, stored, valid, 0, n);
        if (until_invalid) /* the walk ends before the first batch whose CRC fails */
            for (Py_ssize_t i = 0; i < n; i++)
                if (!valid[i]) {
                    n = i;
                    pos = positions[i];
                    break;
                }
    }
    Py_END_ALLOW_THREADS
    release_view(&view);
    if (n == counted) {
        data->facts = facts;
        data->facts.failed_crcs = failed_crcs;
    } else /* cut before a CRC that failed: counted again (none failed before it) */
        columns_count(data, cols, stride, n, 0);
    if (n == limit && n > 0) /* a full run: its pads zeroed, so equal runs compare equal */
        for (int c = 0; c < WALK_COLUMNS; c++)
            memset(cols + c * stride + n, 0, (size_t)(stride - n) * sizeof(int64_t));
    else { /* a short run: its columns n apart, in a block their size */
        RunColumns *full = data;
        data = columns_new(row_bytes * n);
        if (data != NULL) {
            int64_t *dst = (int64_t *)data->data;
            for (int c = 0; c < WALK_COLUMNS; c++)
                memcpy(dst + c * n, cols + c * stride, (size_t)n * sizeof(int64_t));
            data->facts = full->facts;
        }
        Py_DECREF(full); /* its block kept for the next run */
        if (data == NULL)
            return NULL;
    }
    return named_result(WALKED_RUN, "(nNn)", n, data, pos);
}

/* kdump.format.walk.Producers */
enum { PRODUCERS_IGNORED = 0, PRODUCERS_TRANSACTIONAL = 1, PRODUCERS_ALL = 2 };

/* flag_batches(base_offsets, last_offsets, epochs, magics, valids, producer_ids, attributes,
 *              segment_base, has_prev, prev_last, epoch, producers)
 *   -> (flagged indices, gaps, first gap or None, has_prev, prev_last, epoch)
 * The C side of kdump.format.walk.flag_batches: which batches of a run need Python's closer
 * look (a failed CRC, offsets not above the previous batch's, below the segment's base, past
 * 2^31-1 from it or running backwards, a new partition leader epoch, a legacy message, a
 * producer batch `producers` asks for); gaps between batches are counted for every batch. */
static PyObject *py_flag_batches(PyObject *self, PyObject *args)
{
    PyObject *objs[7];
    long long seg_base, prev_last, epoch, first_gap_prev = 0, first_gap_base = 0;
    int has_prev, producers;
    if (!PyArg_ParseTuple(args, "OOOOOOOLpLLi", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &seg_base, &has_prev, &prev_last, &epoch,
                          &producers))
        return NULL;
    Py_buffer views[7];
    const int64_t *col[7];
    Py_ssize_t n = -1;
    if (get_columns(objs, views, col, 7, &n) < 0)
        return NULL;
    PyObject *flagged = PyList_New(0);
    Py_ssize_t gaps = 0;
    for (Py_ssize_t i = 0; flagged != NULL && i < n; i++) {
        int64_t base = col[0][i], last = col[1][i], from_seg_base;
        int attention = col[4][i] == 0 || col[3][i] < 2 || col[2][i] != epoch || last < base ||
                        base < seg_base ||
                        __builtin_sub_overflow(last, (int64_t)seg_base, &from_seg_base) ||
                        from_seg_base > INT32_MAX;
        if (has_prev) {
            if (base <= prev_last)
                attention = 1;
            else if (base - 1 != prev_last && gaps++ == 0) {
                first_gap_prev = prev_last;
                first_gap_base = base;
            }
        } else
            attention = 1;
        if (producers != PRODUCERS_IGNORED && col[5][i] >= 0 &&
            (producers == PRODUCERS_ALL || (col[6][i] & 0x30) != 0))
            attention = 1;
        if (attention && append_index(flagged, i) < 0)
            Py_CLEAR(flagged);
        has_prev = 1;
        prev_last = last;
        epoch = col[2][i];
    }
    release_columns(views, 7);
    if (flagged == NULL)
        return NULL;
    PyObject *first_gap = gaps ? Py_BuildValue("(LL)", first_gap_prev, first_gap_base)
                               : (Py_INCREF(Py_None), Py_None);
    if (first_gap == NULL) {
        Py_DECREF(flagged);
        return NULL;
    }
    return Py_BuildValue("(NnNNLL)", flagged, gaps, first_gap, PyBool_FromLong(has_prev),
                         prev_last, epoch);
}

/* column_range(column, stop) -> (min, max) of column[:stop] (an int64 column; stop clipped to
 * its length), or None for no values. A run's timestamp range without a Python int per batch:
 * min() and max() over a column of 8 M small batches cost ~0.2 s per GiB. */
static PyObject *py_column_range(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t stop;
    if (!PyArg_ParseTuple(args, "On", &obj, &stop))
        return NULL;
    Py_buffer view;
    const int64_t *col;
    Py_ssize_t n = -1;
    if (get_columns(&obj, &view, &col, 1, &n) < 0)
        return NULL;
    if (stop < n)
        n = stop < 0 ? 0 : stop;
    if (n == 0) {
        release_columns(&view, 1);
        Py_RETURN_NONE;
    }
    int64_t lo = col[0], hi = col[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        lo = col[i] < lo ? col[i] : lo;
        hi = col[i] > hi ? col[i] : hi;
    }
    release_columns(&view, 1);
    return Py_BuildValue("(LL)", (long long)lo, (long long)hi);
}

/* count_masked(column, mask) -> how many values of an int64 column have a bit of mask set.
 * A run's transactional and delete-horizon batches (kdump.checks.log.LogScan.take): the
 * bytes of their low bytes, translated and counted in Python, cost ~30 us a run of 4096,
 * ~60 ms per GiB of small batches. */
static PyObject *py_count_masked(PyObject *self, PyObject *args)
{
    PyObject *obj;
    long long mask;
    if (!PyArg_ParseTuple(args, "OL", &obj, &mask))
        return NULL;
    Py_buffer view;
    const int64_t *col;
    Py_ssize_t n = -1, count = 0;
    if (get_columns(&obj, &view, &col, 1, &n) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        count += (col[i] & mask) != 0;
    release_columns(&view, 1);
    return PyLong_FromSsize_t(count);
}

/* index_points(positions, last_offsets, max_timestamps, interval, last_entry, max_ts,
 *              offset_of_max_ts)
 *   -> IndexPoints(last_entry, max_ts, offset_of_max_ts, offsets, positions, timestamps,
 *                  time_offsets)
 * LogSegment.recover's index appends over a run of batches (kdump.repair.rebuild's
 * _IndexWriter.batches): the running largest timestamp, and an entry wherever more than
 * `interval` bytes have passed since the last one. Entries come back as native int64 columns. */
static PyObject *py_index_points(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    long long interval, last_entry, max_ts, at_max;
    Py_buffer views[3];
    const int64_t *cols[3];
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOOLLLL", &objs[0], &objs[1], &objs[2], &interval,
                          &last_entry, &max_ts, &at_max) ||
        get_columns(objs, views, cols, 3, &n) < 0)
        return NULL;
    const int64_t *positions = cols[0], *lasts = cols[1], *maxts = cols[2];
    int64_t *out = PyMem_Malloc(sizeof(int64_t) * 4 * (size_t)(n ? n : 1));
    PyObject *result = NULL;
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t since;
        if (maxts[i] > max_ts) {
            max_ts = maxts[i];
            at_max = lasts[i];
        }
        if (__builtin_sub_overflow(positions[i], (int64_t)last_entry, &since)) {
            PyErr_SetString(PyExc_OverflowError, "position out of range");
            goto done;
        }
        if (since > interval) {
            out[k] = lasts[i];
            out[n + k] = positions[i];
            out[2 * n + k] = max_ts;
            out[3 * n + k] = at_max;
            last_entry = positions[i];
            k++;
        }
    }
    Py_ssize_t bytes = k * (Py_ssize_t)sizeof(int64_t);
    result = named_result(INDEX_POINTS, "(LLLy#y#y#y#)", last_entry, max_ts, at_max,
                          (const char *)out, bytes, (const char *)(out + n), bytes,
                          (const char *)(out + 2 * n), bytes, (const char *)(out + 3 * n), bytes);
done:
    PyMem_Free(out);
    release_columns(views, 3);
    return result;
}

/* pack_entries(firsts, seconds, base_offset, time_index, last_first, last_second)
 *   -> PackedEntries(data, entries, last_first, last_second) or None
 * The in-order case of the rebuild's index builders (kdump.repair.rebuild), whose Python code
 * takes every other case: offset index entries (offset, position) from strictly rising
 * offsets above last_first; time index entries (timestamp, offset) from rising timestamps and
 * offsets not below last_second, only those with a timestamp above the one before (above
 * last_first for the first), as TimeIndex.maybeAppend keeps them. Packed big-endian, offsets
 * relative to base_offset; None where an entry is out of that order or does not fit. */
static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static PyObject *py_pack_entries(PyObject *self, PyObject *args)
{
    PyObject *objs[2];
    long long base, last_first, last_second;
    int time_index;
    Py_buffer views[2];
    const int64_t *cols[2];
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOLpLL", &objs[0], &objs[1], &base, &time_index, &last_first,
                          &last_second) ||
        get_columns(objs, views, cols, 2, &n) < 0)
        return NULL;
    const int64_t *firsts = cols[0], *seconds = cols[1];
    Py_ssize_t width = time_index ? TIME_INDEX_ENTRY : OFFSET_INDEX_ENTRY;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * width);
    if (out == NULL) {
        release_columns(views, 2);
        return NULL;
    }
    uint8_t *p = (uint8_t *)PyBytes_AsString(out);
    Py_ssize_t k = 0;
    int in_order = 1;
    int64_t not_before = last_second; /* time index: the offset no entry may go below */
    for (Py_ssize_t i = 0; i < n && in_order; i++) {
        int64_t first = firsts[i], second = seconds[i], rel;
        if (time_index) {
            /* offsets never back, timestamps never back; a timestamp not above the last
             * one kept makes no entry */
            if (second < not_before || (i && first < firsts[i - 1]))
                in_order = 0;
            else if (first > last_first) {
                if (__builtin_sub_overflow(second, (int64_t)base, &rel) || rel < 0 ||
                    rel > INT32_MAX)
                    in_order = 0;
                else {
                    uint64_t ts = (uint64_t)first;
                    put_be32(p, (uint32_t)(ts >> 32));
                    put_be32(p + 4, (uint32_t)ts);
                    put_be32(p + 8, (uint32_t)rel);
                    p += width;
                    k++;
                    last_first = first;
                    last_second = second;
                }
            }
            not_before = second;
        } else {
            if (first <= last_first || __builtin_sub_overflow(first, (int64_t)base, &rel) ||
                rel < 0 || rel > INT32_MAX || second < 0 || second > INT32_MAX)
                in_order = 0;
            else {
                put_be32(p, (uint32_t)rel);
                put_be32(p + 4, (uint32_t)second);
                p += width;
                k++;
                last_first = first;
                last_second = second;
            }
        }
    }
    release_columns(views, 2);
    if (!in_order) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (k < n) { /* fewer entries than rows: bytes of their own size (no resize in the
                    stable ABI) */
        PyObject *full = out;
        out = PyBytes_FromStringAndSize(PyBytes_AsString(full), k * width);
        Py_DECREF(full);
        if (out == NULL)
            return NULL;
    }
    return named_result(PACKED_ENTRIES, "(NnLL)", out, k, last_first, last_second);
}

/* ------------------------------------------------------------------ UTF-8 */

/* Whether p[0..n) is UTF-8 that Python's strict decoder accepts (no overlong forms, no
 * surrogates, nothing above U+10FFFF): then Kafka's StringDecoder gives the bytes back
 * unchanged, and lossless JSON writes them as text. */
static int valid_utf8(const uint8_t *p, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        /* eight ASCII bytes at a time */
        while (i + 8 <= n && (load_le64(p + i) & 0x8080808080808080ull) == 0)
            i += 8;
        if (i >= n)
            break;
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else
            return 0;
        if (n - i < len || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (int k = 2; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

static inline int is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

/* String.decodeUTF8_UTF16's isMalformed4_2: the second byte of a 4-byte lead at the end. */
static inline int malformed4_2(uint8_t b1, uint8_t b2)
{
    return (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) || (b1 == 0xF4 && (b2 & 0xF0) != 0x80) ||
           !is_continuation(b2);
}

/* One byte that is a whole character or a whole replacement: its output (up to 3 bytes, 4
 * stored) and length; 0 for a lead byte of a multi-byte sequence, which needs what follows. A
 * byte 0x80-0xC1 or 0xF5-0xFF is always one U+FFFD (the loop below, for any bytes after it). */
static uint8_t single_bytes[256][4];
static uint8_t single_len[256];

static void utf8_tables(void)
{
    for (int c = 0; c < 256; c++) {
        if (c < 0x80) {
            single_bytes[c][0] = (uint8_t)c;
            single_len[c] = 1;
        } else if (c < 0xC2 || c > 0xF4) {
            single_bytes[c][0] = 0xEF, single_bytes[c][1] = 0xBF, single_bytes[c][2] = 0xBD;
            single_len[c] = 3;
        }
    }
}

/* Java's new String(bytes, UTF_8), as Kafka's StringDecoder and header keys decode, written as
 * UTF-8 to d (room for 3 * n + 1 bytes); the length written. It follows the JDK's
 * String.decodeUTF8_UTF16 (doReplace; 17 through 25), kdump.java.java_string and the
 * statement-by-statement transcription in tests/javautf8.py: each stretch it rejects is one
 * U+FFFD, the stretches as malformed3/malformed4 measure them, an encoded surrogate
 * (ED A0..BF xx) one character replaced whole, and a sequence cut by the end of the bytes as the
 * loop's "break" ends it. */
static Py_ssize_t java_utf8_into(char *out, const uint8_t *p, int64_t n)
{
    static const uint8_t repl[3] = {0xEF, 0xBF, 0xBD};
    uint8_t *d = (uint8_t *)out;
    int64_t i = 0;
    while (i < n) {
        if (i + 8 <= n && (load_le64(p + i) & 0x8080808080808080ull) == 0) {
            memcpy(d, p + i, 8); /* eight ASCII bytes at a time */
            d += 8;
            i += 8;
            continue;
        }
        uint8_t c = p[i];
        uint8_t one = single_len[c];
        if (one) { /* most bytes of binary values: one store, no test of what follows */
            memcpy(d, single_bytes[c], 4); /* the output has a byte of room past n * 3 */
            d += one;
            i++;
            continue;
        }
        int64_t left = n - i - 1; /* bytes after the lead */
        int take = 0;             /* a character's bytes, copied as they are */
        int64_t skip = 1;         /* else the bytes one U+FFFD replaces */
        if (c <= 0xDF) {
            if (left >= 1 && is_continuation(p[i + 1]))
                take = 2;
        } else if (c <= 0xEF) {
            if (left >= 2) {
                uint8_t b2 = p[i + 1], b3 = p[i + 2];
                if ((c == 0xE0 && b2 < 0xA0) || !is_continuation(b2))
                    skip = 1;
                else if (!is_continuation(b3))
                    skip = 2;
                else if (c == 0xED && b2 >= 0xA0)
                    skip = 3; /* Character.isSurrogate(decode3(...)) */
                else
                    take = 3;
            } else if (left == 1 && !((c == 0xE0 && p[i + 1] < 0xA0) || !is_continuation(p[i + 1])))
                skip = 2; /* isMalformed3_2 false: one U+FFFD, and the loop breaks */
        } else { /* 0xF0-0xF4 */
            if (left >= 3) {
                uint8_t b2 = p[i + 1];
                if (malformed4_2(c, b2))
                    skip = 1;
                else if (!is_continuation(p[i + 2]))
                    skip = 2;
                else if (!is_continuation(p[i + 3]))
                    skip = 3;
                else
                    take = 4;
            } else if (left >= 1 && !malformed4_2(c, p[i + 1]))
                /* sp++ passes the second byte; a third that continues ends the loop too */
                skip = left == 2 && is_continuation(p[i + 2]) ? 3 : 2;
        }
        if (take) {
            memcpy(d, p + i, (size_t)take);
            d += take;
            i += take;
        } else {
            memcpy(d, repl, 3);
            d += 3;
            i += skip;
        }
    }
    return (Py_ssize_t)(d - (uint8_t *)out);
}

/* java_utf8(buf) -> bytes: Java's new String(buf, UTF_8), as UTF-8 (for the tests). */
static PyObject *py_java_utf8(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (get_view(arg, &view) < 0)
        return NULL;
    /* a buffer of its own, then bytes of the size written: no resize in the stable ABI */
    char *tmp = PyMem_Malloc((size_t)view.len * 3 + 1);
    PyObject *out = tmp == NULL ? PyErr_NoMemory()
                                : PyBytes_FromStringAndSize(
                                      tmp, java_utf8_into(tmp, view.buf, view.len));
    PyMem_Free(tmp);
    release_view(&view);
    return out;
}

/* A Python str of Java's new String(p, UTF_8). */
static PyObject *java_str(const uint8_t *p, int64_t n)
{
    if (valid_utf8(p, n))
        return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
    char *tmp = PyMem_Malloc((size_t)n * 3 + 1);
    if (tmp == NULL)
        return PyErr_NoMemory();
    PyObject *s = PyUnicode_DecodeUTF8(tmp, java_utf8_into(tmp, p, n), "strict");
    PyMem_Free(tmp);
    return s;
}

/* ------------------------------------------------------------------ v2 records */

/* Why decoding stopped: kdump.format.records.RecordFault, whose names are record_faults below
 * (checked there at import) and which words each one, for this decoder and its own. */
enum { OK = 0, PAST_BATCH, VARINT_TOO_LONG, BAD_LENGTH, FIELD_PAST_RECORD, BAD_HEADER_COUNT,
       BAD_HEADER_KEY, BAD_RECORD_SIZE, TOO_MANY_HEADERS, UNMODELLED, N_FAULTS };
static const char *const record_faults[N_FAULTS] = {
    "OK", "PAST_BATCH", "VARINT_TOO_LONG", "BAD_LENGTH", "FIELD_PAST_RECORD",
    "BAD_HEADER_COUNT", "BAD_HEADER_KEY", "BAD_RECORD_SIZE", "TOO_MANY_HEADERS", "UNMODELLED",
};

typedef struct {
    const uint8_t *data;
    Py_ssize_t size;
    int error;
    int64_t detail, detail2;
} reader;

/* A zig-zag varint of at most max_bytes bytes at *pos. More than 63 bits of payload (a
 * ten-byte varlong) is left to the Python decoder, whose integers do not wrap. */
static int64_t read_varint(reader *r, Py_ssize_t *pos, int max_bytes)
{
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= r->size) {
            r->error = PAST_BATCH;
            return 0;
        }
        uint8_t b = r->data[(*pos)++];
        if (shift == 63) {
            r->error = UNMODELLED;
            return 0;
        }
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            return (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        shift += 7;
    }
    r->error = VARINT_TOO_LONG;
    return 0;
}

/* A field of `size` bytes at *pos (size -1: null), inside the record ending at `end`. */
static int skip_field(reader *r, Py_ssize_t *pos, int64_t size, Py_ssize_t end)
{
    if (size >= 0 && size > end - *pos) { /* a null field is never checked (the reader may be
                                            * past the end of a record that is too short) */
        r->error = FIELD_PAST_RECORD;
        r->detail = size;
        return -1;
    }
    if (size > 0)
        *pos += (Py_ssize_t)size;
    return 0;
}

/* One decoded record, pointing into the payload: what DefaultRecord.readFrom reads. */
typedef struct {
    int64_t offset, timestamp, sequence;
    int attributes;
    Py_ssize_t size; /* the whole record, its length varint included */
    const uint8_t *key, *value, *headers;
    int64_t key_size, value_size, header_count; /* sizes -1: null */
} record_view;

typedef struct {
    int64_t base_offset, base_timestamp, append_time;
    int has_append_time;
    int32_t base_sequence;
} batch_context;

/* The headers of a record: a count, then per header a key and a value (value size -1: null).
 * Checked once by parse_record; next_header() then reads them again without checks. */
static int check_headers(reader *r, Py_ssize_t *pos, Py_ssize_t end, int64_t *count)
{
    *count = read_varint(r, pos, 5);
    if (r->error)
        return -1;
    if (*count < 0) {
        r->error = BAD_HEADER_COUNT;
        r->detail = *count;
        return -1;
    }
    for (int64_t i = 0; i < *count; i++) {
        int64_t key_size = read_varint(r, pos, 5);
        if (r->error)
            return -1;
        if (key_size < 0) {
            r->error = BAD_HEADER_KEY;
            r->detail = key_size;
            return -1;
        }
        if (skip_field(r, pos, key_size, end) < 0)
            return -1;
        int64_t value_size = read_varint(r, pos, 5);
        if (r->error || skip_field(r, pos, value_size, end) < 0)
            return -1;
    }
    return 0;
}

/* A varint parse_record has already checked. */
static int64_t checked_varint(const uint8_t **p)
{
    uint64_t raw = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        raw |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
    } while (b >= 0x80);
    return (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
}

typedef struct {
    const uint8_t *key, *value;
    int64_t key_size, value_size;
} header_view;

static void next_header(const uint8_t **p, header_view *h)
{
    h->key_size = checked_varint(p);
    h->key = *p;
    *p += h->key_size;
    h->value_size = checked_varint(p);
    h->value = *p;
    if (h->value_size > 0)
        *p += h->value_size;
}

/* DefaultRecord.readFrom at *pos: 0 with *rec filled and *pos past the record, or -1 with
 * r->error set (UNMODELLED: what only the Python decoder models). */
static int parse_record(reader *r, Py_ssize_t *pos, const batch_context *ctx, record_view *rec)
{
    Py_ssize_t start = *pos, p = start;
    int64_t length = read_varint(r, &p, 5);
    if (r->error)
        return -1;
    if (length < 0 || length > r->size - p) {
        r->error = BAD_LENGTH;
        r->detail = length;
        return -1;
    }
    Py_ssize_t body = p, end = p + (Py_ssize_t)length;
    if (p >= r->size) {
        r->error = PAST_BATCH;
        return -1;
    }
    rec->attributes = r->data[p++];
    int64_t timestamp_delta = read_varint(r, &p, 10);
    int64_t offset_delta = r->error ? 0 : read_varint(r, &p, 5);
    rec->key_size = r->error ? 0 : read_varint(r, &p, 5);
    if (r->error)
        return -1;
    rec->key = r->data + p;
    if (skip_field(r, &p, rec->key_size, end) < 0)
        return -1;
    rec->value_size = read_varint(r, &p, 5);
    if (r->error)
        return -1;
    rec->value = r->data + p;
    if (skip_field(r, &p, rec->value_size, end) < 0)
        return -1;
    if (p < r->size && r->data[p] == 0) { /* no header, the usual case */
        rec->header_count = 0;
        p++;
        rec->headers = r->data + p;
    } else {
        Py_ssize_t count_at = p;
        if (check_headers(r, &p, end, &rec->header_count) < 0)
            return -1;
        const uint8_t *h = r->data + count_at;
        checked_varint(&h);
        rec->headers = h;
    }
    if (p != end) {
        r->error = BAD_RECORD_SIZE;
        r->detail = length;
        r->detail2 = p - body;
        return -1;
    }
    rec->timestamp = ctx->append_time;
    if (__builtin_add_overflow(ctx->base_offset, offset_delta, &rec->offset) ||
        (!ctx->has_append_time &&
         __builtin_add_overflow(ctx->base_timestamp, timestamp_delta, &rec->timestamp))) {
        r->error = UNMODELLED;
        return -1;
    }
    rec->sequence = -1;
    if (ctx->base_sequence != -1) {
        int64_t room = (int64_t)INT32_MAX - ctx->base_sequence;
        rec->sequence =
            offset_delta <= room ? ctx->base_sequence + offset_delta : offset_delta - room - 1;
    }
    rec->size = end - start;
    *pos = end;
    return 0;
}

static PyObject *bytes_or_none(const uint8_t *p, int64_t size)
{
    if (size < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)size);
}

/* The headers of a view as a tuple of Header tuples (key decoded as Java decodes it, as
 * Python's record decoder does: DefaultRecord.readHeaders' Utils.utf8). */
static PyObject *headers_tuple(const record_view *rec, const tuple_maker *header_cls)
{
    PyObject *headers = PyTuple_New((Py_ssize_t)rec->header_count);
    const uint8_t *h = rec->headers;
    for (int64_t i = 0; headers != NULL && i < rec->header_count; i++) {
        header_view hv;
        next_header(&h, &hv);
        PyObject *header = new_tuple_of(header_cls, 2);
        PyObject *key = java_str(hv.key, hv.key_size);
        PyObject *value = bytes_or_none(hv.value, hv.value_size);
        if (header == NULL || key == NULL || value == NULL) {
            Py_XDECREF(header);
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_CLEAR(headers);
            break;
        }
        PyTuple_SetItem(header, 0, key);
        PyTuple_SetItem(header, 1, value);
        PyTuple_SetItem(headers, (Py_ssize_t)i, header);
    }
    return headers;
}

/* ------------------------------------------------------------------ the Record type */

/* kdump.format.records.Record (a NamedTuple) in C, for the records the C decoder makes: the
 * same fields in the same order, read by name or position, equal (and hashing) as the tuple of
 * its fields, printing and pickling as the Python Record; anything else (_replace, _asdict,
 * _fields) is the Python Record's. The integers are kept in C and made Python objects only
 * when read: a record costs its key, its value and itself. */

#define RECORD_FIELDS 10
/* Record._fields, in order (checked there at import): the C Record's item i is names[i]. */
static const char *const record_fields[RECORD_FIELDS] = {
    "offset", "timestamp", "key", "value", "headers", "sequence", "attributes",
    "size_in_bytes", "crc", "is_valid",
};

typedef struct {
    PyObject_HEAD
    int64_t offset, timestamp, sequence;
    Py_ssize_t size;
    int attributes;
    PyObject *key, *value, *headers; /* owned; key and value may be None */
} CRecord;

static PyTypeObject *CRecordType; /* made from crecord_spec when the module loads */
static PyObject *python_record; /* kdump.format.records.Record, set by set_record_class */

/* A record of the view, without headers yet (the caller sets them). Not tracked by the cycle
 * collector: it holds bytes and a tuple of headers, never a cycle. */
static PyObject *crecord_new(const record_view *rec)
{
    CRecord *r = PyObject_New(CRecord, CRecordType);
    if (r == NULL)
        return NULL;
    r->offset = rec->offset;
    r->timestamp = rec->timestamp;
    r->sequence = rec->sequence;
    r->size = rec->size;
    r->attributes = rec->attributes;
    r->key = bytes_or_none(rec->key, rec->key_size);
    r->value = bytes_or_none(rec->value, rec->value_size);
    r->headers = NULL;
    if (r->key == NULL || r->value == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

static void crecord_dealloc(CRecord *r)
{
    Py_CLEAR(r->key);
    Py_CLEAR(r->value);
    Py_CLEAR(r->headers);
    PyTypeObject *type = Py_TYPE((PyObject *)r);
    PyObject_Free(r);
    Py_DECREF(type);
}

/* Field i, as the Python Record holds it. */
static PyObject *crecord_item(CRecord *r, Py_ssize_t i)
{
    switch (i) {
    case 0: return PyLong_FromLongLong(r->offset);
    case 1: return PyLong_FromLongLong(r->timestamp);
    case 2: return Py_NewRef(r->key);
    case 3: return Py_NewRef(r->value);
    case 4: return Py_NewRef(r->headers != NULL ? r->headers : Py_None);
    case 5: return PyLong_FromLongLong(r->sequence);
    case 6: return PyLong_FromLong(r->attributes);
    case 7: return PyLong_FromSsize_t(r->size);
    case 8:
    case 9: Py_RETURN_NONE; /* crc, is_valid: v0/v1 records only */
    }
    PyErr_SetString(PyExc_IndexError, "Record index out of range");
    return NULL;
}

static Py_ssize_t crecord_length(PyObject *self) { return RECORD_FIELDS; }

static PyObject *crecord_sq_item(PyObject *self, Py_ssize_t i)
{
    return crecord_item((CRecord *)self, i);
}

static PyObject *crecord_as_tuple(CRecord *r)
{
    PyObject *t = PyTuple_New(RECORD_FIELDS);
    for (Py_ssize_t i = 0; t != NULL && i < RECORD_FIELDS; i++) {
        PyObject *item = crecord_item(r, i);
        if (item == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SetItem(t, i, item);
    }
    return t;
}

/* Raised where the Python Record is needed and kdump.format.records has not set it. */
static int python_record_set(void)
{
    if (python_record != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError,
                    "kdump._speedups.Record: import kdump.format.records first (set_record_class)");
    return 0;
}

/* The Python Record with the same fields (what printing, pickling and the rest go through). */
static PyObject *crecord_python(CRecord *r)
{
    if (!python_record_set())
        return NULL;
    PyObject *fields = crecord_as_tuple(r);
    if (fields == NULL)
        return NULL;
    PyObject *out = PyObject_Call(python_record, fields, NULL);
    Py_DECREF(fields);
    return out;
}

static PyObject *crecord_subscript(PyObject *self, PyObject *key)
{
    PyObject *fields = crecord_as_tuple((CRecord *)self);
    if (fields == NULL)
        return NULL;
    PyObject *out = PyObject_GetItem(fields, key);
    Py_DECREF(fields);
    return out;
}

static PyObject *crecord_richcompare(PyObject *self, PyObject *other, int op)
{
    if (!PyTuple_Check(other) && !PyObject_TypeCheck(other, CRecordType))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = crecord_as_tuple((CRecord *)self);
    PyObject *theirs = PyObject_TypeCheck(other, CRecordType)
                           ? crecord_as_tuple((CRecord *)other)
                           : PySequence_Tuple(other);
    PyObject *out = NULL;
    if (mine != NULL && theirs != NULL)
        out = PyObject_RichCompare(mine, theirs, op);
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return out;
}

static Py_hash_t crecord_hash(PyObject *self)
{
    PyObject *fields = crecord_as_tuple((CRecord *)self);
    if (fields == NULL)
        return -1;
    Py_hash_t h = PyObject_Hash(fields);
    Py_DECREF(fields);
    return h;
}

static PyObject *crecord_repr(PyObject *self)
{
    PyObject *python = crecord_python((CRecord *)self);
    if (python == NULL)
        return NULL;
    PyObject *out = PyObject_Repr(python);
    Py_DECREF(python);
    return out;
}

static PyObject *crecord_reduce(PyObject *self, PyObject *unused)
{
    if (!python_record_set())
        return NULL;
    PyObject *fields = crecord_as_tuple((CRecord *)self);
    return fields == NULL ? NULL : Py_BuildValue("(ON)", python_record, fields);
}

/* Attributes: the fields by name, the Python Record's properties and methods otherwise. */
static PyObject *crecord_getattro(PyObject *self, PyObject *name)
{
    const char *const *names = record_fields;
    CRecord *r = (CRecord *)self;
    const char *s = PyUnicode_AsUTF8AndSize(name, NULL); /* NULL, TypeError: not a str */
    if (s != NULL) {
        for (Py_ssize_t i = 0; i < RECORD_FIELDS; i++)
            if (strcmp(s, names[i]) == 0)
                return crecord_item(r, i);
        if (strcmp(s, "key_size") == 0)
            return PyLong_FromSsize_t(r->key == Py_None ? -1 : PyBytes_Size(r->key));
        if (strcmp(s, "value_size") == 0)
            return PyLong_FromSsize_t(r->value == Py_None ? -1 : PyBytes_Size(r->value));
    }
    PyErr_Clear();
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    PyObject *python = crecord_python(r);
    if (python == NULL)
        return NULL;
    found = PyObject_GetAttr(python, name);
    Py_DECREF(python);
    return found;
}

static PyMethodDef crecord_methods[] = {
    {"__reduce__", crecord_reduce, METH_NOARGS, "Pickled as the Python Record."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot crecord_slots[] = {
    {Py_tp_doc, "A record of a v2 batch: kdump.format.records.Record, made in C."},
    {Py_tp_dealloc, crecord_dealloc},
    {Py_tp_repr, crecord_repr},
    {Py_sq_length, crecord_length},
    {Py_sq_item, crecord_sq_item},
    {Py_mp_length, crecord_length},
    {Py_mp_subscript, crecord_subscript},
    {Py_tp_hash, crecord_hash},
    {Py_tp_getattro, crecord_getattro},
    {Py_tp_richcompare, crecord_richcompare},
    {Py_tp_methods, crecord_methods},
    {0, NULL},
};

/* made only by the C decoder: Python code cannot make one (it would hold no key or value) */
static PyType_Spec crecord_spec = {
    "kdump._speedups.Record", sizeof(CRecord), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, crecord_slots,
};

/* set_record_class(Record): the Python Record the C one prints, pickles and delegates as. */
static PyObject *py_set_record_class(PyObject *self, PyObject *cls)
{
    if (check_type(cls) < 0)
        return NULL;
    PyObject *was = python_record;
    python_record = Py_NewRef(cls);
    Py_XDECREF(was);
    Py_RETURN_NONE;
}

/* v2_records(payload, count, base_offset, base_timestamp, append_time, base_sequence,
 *            record_cls, header_cls[, start, first, max_records, max_bytes, max_headers])
 *   -> None when record `first` (at `start` in the payload) holds something only the Python
 *      decoder models (it then decodes the rest of the batch), else (records, position in the
 *      payload where decoding stopped, error) where error is None or RecordError(number of the
 *      record that failed, fault, detail, detail2): a RecordFault and the numbers its wording
 *      takes.
 * Records `first` to `count` - 1 from `start`, at most `max_records` of them and no more once
 * `max_bytes` of the payload are read, so a batch of millions of records (a decompression bomb
 * holds 38 M in 22 KB) is decoded a slice at a time and never held whole as Python objects;
 * fewer records than asked for and no error: the caller asks again from the position given
 * (where something only Python models stopped this slice, that call returns None). */
static PyObject *py_v2_records(PyObject *self, PyObject *args)
{
    PyObject *obj, *append_obj, *record_cls, *header_cls;
    Py_ssize_t count, start = 0, first = 0, max_records = PY_SSIZE_T_MAX,
                      max_bytes = PY_SSIZE_T_MAX, max_headers = PY_SSIZE_T_MAX;
    long long base_offset, base_timestamp;
    int base_sequence;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnLLOiOO|nnnnn", &obj, &count, &base_offset, &base_timestamp,
                          &append_obj, &base_sequence, &record_cls, &header_cls, &start, &first,
                          &max_records, &max_bytes, &max_headers) ||
        check_type(record_cls) < 0 || check_type(header_cls) < 0)
        return NULL;
    if (start < 0 || first < 0 || max_records < 0 || max_bytes < 0 || max_headers < 0) {
        PyErr_SetString(PyExc_ValueError, "v2_records: start, first and the limits are >= 0");
        return NULL;
    }
    batch_context ctx = {base_offset, base_timestamp, 0, append_obj != Py_None, base_sequence};
    if (ctx.has_append_time) {
        ctx.append_time = PyLong_AsLongLong(append_obj);
        if (ctx.append_time == -1 && PyErr_Occurred())
            return NULL;
    }
    if (get_view(obj, &view) < 0)
        return NULL;
    if (start > view.len) {
        release_view(&view);
        PyErr_SetString(PyExc_ValueError, "v2_records: start is past the payload");
        return NULL;
    }
    tuple_maker header_maker = tuple_maker_of(header_cls);
    reader r = {view.buf, view.len, OK, 0, 0};
    /* room for every record asked for that the rest of the payload can hold (one takes at
     * least 7 bytes), made once */
    Py_ssize_t wanted = count - first < max_records ? count - first : max_records;
    Py_ssize_t room = (view.len - start) / 7 + 1;
    room = wanted < room ? wanted : room;
    PyObject *list = PyList_New(room > 0 ? room : 0);
    Py_ssize_t pos = start, n = 0;
    for (; list != NULL && n < room && pos - start <= max_bytes; n++) {
        record_view rec;
        Py_ssize_t at = pos;
        if (parse_record(&r, &pos, &ctx, &rec) < 0)
            break;
        if (rec.header_count > max_headers) { /* refused before a Python object is made of it */
            r.error = TOO_MANY_HEADERS;
            r.detail = rec.header_count;
            r.detail2 = max_headers;
            pos = at;
            break;
        }
        PyObject *record = crecord_new(&rec);
        if (record != NULL) {
            CRecord *c = (CRecord *)record;
            c->headers = headers_tuple(&rec, &header_maker);
            if (c->headers == NULL)
                Py_CLEAR(record);
        }
        if (record == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, n, record);
    }
    if (n < wanted && n == room && room < max_records && !r.error)
        r.error = PAST_BATCH; /* more records than bytes: past the payload */
    if (list != NULL && PyList_SetSlice(list, n, PyList_Size(list), NULL) < 0)
        Py_CLEAR(list);
    release_view(&view);
    if (list == NULL || PyErr_Occurred()) {
        Py_XDECREF(list);
        return NULL;
    }
    if (r.error == UNMODELLED) {
        if (n == 0) {
            Py_DECREF(list);
            Py_RETURN_NONE;
        }
        r.error = OK; /* the records before it; the next call returns None */
    }
    if (r.error)
        return Py_BuildValue("(NnN)", list, pos,
                             named_result(RECORD_ERROR, "(niLL)", first + n, r.error,
                                          (long long)r.detail, (long long)r.detail2));
    /* a plain tuple: once per slice, the hot path of small batches (a struct sequence, made
     * without a free list, cost 5% on one-record batches) */
    return Py_BuildValue("(NnO)", list, pos, Py_None);
}

/* ------------------------------------------------------------------ rendering dump lines */

/* A growing output buffer. */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} outbuf;

/* The last rendering call's buffer, kept for the next (the GIL guards it): a fresh one grew
 * by doubling from 64 KiB past the call's megabyte of lines, each growth a copy, and glibc
 * mapped and faulted in the larger ones again every call. */
static char *spare_out;
static Py_ssize_t spare_out_cap;

/* An empty buffer with room for ``size`` bytes: the spare one where it is large enough. */
static outbuf ob_take(Py_ssize_t size)
{
    outbuf o = {NULL, 0, 0};
    if (spare_out != NULL && spare_out_cap >= size) {
        o.data = spare_out;
        o.cap = spare_out_cap;
        spare_out = NULL;
    }
    return o;
}

/* Done with ``o``: kept as the spare (the larger of the two), or freed. */
static void ob_give(outbuf *o)
{
    if (o->data != NULL && (spare_out == NULL || o->cap > spare_out_cap)) {
        PyMem_Free(spare_out);
        spare_out = o->data;
        spare_out_cap = o->cap;
    } else
        PyMem_Free(o->data);
    o->data = NULL;
}

/* ob_reserve's growth, out of line: the check it follows is inlined in every field's writer,
 * the growth runs a few times a call. */
static int ob_grow(outbuf *o, Py_ssize_t extra)
{
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap - o->len < extra) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *data = PyMem_Realloc(o->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = data;
    o->cap = cap;
    return 0;
}

static inline int ob_reserve(outbuf *o, Py_ssize_t extra)
{
    return __builtin_expect(extra <= o->cap - o->len, 1) ? 0 : ob_grow(o, extra);
}

static inline int ob_put(outbuf *o, const void *s, Py_ssize_t n)
{
    if (ob_reserve(o, n) < 0)
        return -1;
    char *d = o->data + o->len;
    const char *c = s;
    /* a line's literals and short fields are a few bytes: two overlapping fixed-size copies
     * (inlined moves) rather than a call of memcpy, whose dispatch costs more than the copy */
    if (n >= 8 && n <= 16) {
        memcpy(d, c, 8);
        memcpy(d + n - 8, c + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(d, c, 4);
        memcpy(d + n - 4, c + n - 4, 4);
    } else
        memcpy(d, c, (size_t)n);
    o->len += n;
    return 0;
}

#define OB_LIT(o, s) ob_put((o), (s), (Py_ssize_t)(sizeof(s) - 1))

/* "00".."99": two digits a step (a dump writes five to ten numbers a record). */
static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

/* Decimal digits of u: floor(log10) from its bit length, corrected by one comparison. */
static int decimal_digits(uint64_t u)
{
    static const uint64_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
    };
    int bits = 64 - __builtin_clzll(u | 1);
    int t = (bits * 1233) >> 12; /* 1233 / 4096: log10(2), from below */
    return t + (t < 20 && u >= pow10[t]);
}

static int ob_int(outbuf *o, int64_t v)
{
    if (ob_reserve(o, 21) < 0)
        return -1;
    char *d = o->data + o->len;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        *d++ = '-';
    int len = u ? decimal_digits(u) : 1;
    char *e = d + len;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        e -= 2;
        memcpy(e, DIGIT_PAIRS + 2 * r, 2);
    }
    if (u >= 10) {
        e -= 2;
        memcpy(e, DIGIT_PAIRS + 2 * u, 2);
    } else
        *--e = (char)('0' + u);
    o->len = (d + len) - o->data;
    return 0;
}

/* Code points a terminal must not be given raw, beyond the C0 controls JSON escapes anyway:
 * DEL, the C1 controls and the invisible formatting characters (kdump.untrusted's _UNSAFE). */
static int unsafe_code_point(uint32_t cp)
{
    return (cp >= 0x7F && cp <= 0x9F) || cp == 0xAD || cp == 0x61C || cp == 0x180E ||
           (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB);
}

/* A JSON string of UTF-8 text as json.dumps(ensure_ascii=False) writes it, then
 * kdump.untrusted.escape_json_text: what a terminal must not be given raw as \uNNNN. */
static int ob_json_string(outbuf *o, const uint8_t *p, int64_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (ob_reserve(o, (Py_ssize_t)n * 6 + 2) < 0)
        return -1;
    char *d = o->data + o->len;
    *d++ = '"';
    for (int64_t i = 0; i < n; i++) {
        /* eight bytes at a time while none needs a look: none below 0x20, none from 0x7f
         * on, no '"', no '\\' (the classic "has a zero byte" test on x, and on x with each
         * byte sought cleared; the high bit of x itself for 0x80 on, x + 1 for 0x7f) */
        while (i + 8 <= n) {
            const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
            uint64_t x = load_le64(p + i), q = x ^ (ones * '"'), b = x ^ (ones * '\\');
            uint64_t hit = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) |
                           x | (x + ones);
            if (hit & highs)
                break;
            memcpy(d, p + i, 8);
            d += 8;
            i += 8;
        }
        if (i >= n)
            break;
        uint8_t c = p[i];
        if (c >= 0x80) { /* valid UTF-8 (the caller's check): a sequence, copied or escaped */
            uint32_t cp = 0;
            int len = 1;
            if ((c & 0xE0) == 0xC0 && i + 1 < n) {
                cp = ((uint32_t)(c & 0x1F) << 6) | (p[i + 1] & 0x3F);
                len = 2;
            } else if ((c & 0xF0) == 0xE0 && i + 2 < n) {
                cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[i + 1] & 0x3F) << 6) |
                     (p[i + 2] & 0x3F);
                len = 3;
            } else if ((c & 0xF8) == 0xF0 && i + 3 < n) {
                len = 4;
            }
            if (unsafe_code_point(cp)) {
                *d++ = '\\';
                *d++ = 'u';
                *d++ = hex[(cp >> 12) & 15];
                *d++ = hex[(cp >> 8) & 15];
                *d++ = hex[(cp >> 4) & 15];
                *d++ = hex[cp & 15];
            } else {
                memcpy(d, p + i, (size_t)len);
                d += len;
            }
            i += len - 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        default:
            *d++ = 'u';
            *d++ = '0';
            *d++ = '0';
            *d++ = hex[c >> 4];
            *d++ = hex[c & 15];
        }
    }
    *d++ = '"';
    o->len = d - o->data;
    return 0;
}

/* kdump.render.describe's decoders, by number (render_batches' key_decoder, value_decoder):
 * LOSSLESS is the default (no decoder asked for): Kafka's StringDecoder text, and in JSON the
 * bytes kept (kdump.format.records.lossless). */
enum {
    DECODER_NONE = 0, DECODER_STRING = 1, DECODER_HEX = 2, DECODER_BASE64 = 3,
    DECODER_LOSSLESS = 4
};

/* Java's new String(p, UTF_8) (java_utf8_into), as text or as a JSON string. */
static int ob_java_string(outbuf *o, const uint8_t *p, int64_t n, int as_json)
{
    if (!as_json) {
        if (ob_reserve(o, (Py_ssize_t)n * 3 + 1) < 0) /* java_utf8_into's byte of room */
            return -1;
        o->len += java_utf8_into(o->data + o->len, p, n);
        return 0;
    }
    if (valid_utf8(p, n))
        return ob_json_string(o, p, n);
    char *tmp = PyMem_Malloc((size_t)n * 3 + 1);
    if (tmp == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int r = ob_json_string(o, (const uint8_t *)tmp, java_utf8_into(tmp, p, n));
    PyMem_Free(tmp);
    return r;
}

/* p[0..n) in hex or base64 (base64.b64encode's alphabet and padding), JSON-quoted or not. */
static int ob_binary(outbuf *o, int decoder, const uint8_t *p, int64_t n, int quoted)
{
    static const char hex[] = "0123456789abcdef";
    static const char b64[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t out = decoder == DECODER_HEX ? (Py_ssize_t)n * 2 : (Py_ssize_t)((n + 2) / 3 * 4);
    if (ob_reserve(o, out + 2) < 0)
        return -1;
    char *d = o->data + o->len;
    if (quoted)
        *d++ = '"';
    if (decoder == DECODER_HEX) {
        for (int64_t i = 0; i < n; i++) {
            *d++ = hex[p[i] >> 4];
            *d++ = hex[p[i] & 15];
        }
    } else {
        int64_t i = 0;
        for (; i + 3 <= n; i += 3) {
            uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
            *d++ = b64[v >> 18];
            *d++ = b64[(v >> 12) & 63];
            *d++ = b64[(v >> 6) & 63];
            *d++ = b64[v & 63];
        }
        if (n - i == 1) {
            uint32_t v = (uint32_t)p[i] << 16;
            *d++ = b64[v >> 18];
            *d++ = b64[(v >> 12) & 63];
            *d++ = '=';
            *d++ = '=';
        } else if (n - i == 2) {
            uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
            *d++ = b64[v >> 18];
            *d++ = b64[(v >> 12) & 63];
            *d++ = b64[(v >> 6) & 63];
            *d++ = '=';
        }
    }
    if (quoted)
        *d++ = '"';
    o->len = d - o->data;
    return 0;
}

/* The decoder's text for p[0..n), JSON-quoted with as_json; utf8: whether the bytes are UTF-8
 * (valid_utf8, asked by the caller: only LOSSLESS in JSON reads it). 1 for a decoder only
 * Python runs, -1 on error. */
static int ob_decoded(outbuf *o, int decoder, const uint8_t *p, int64_t n, int as_json,
                      int utf8)
{
    switch (decoder) {
    case DECODER_LOSSLESS:
        if (as_json)
            return utf8 ? ob_json_string(o, p, n) : ob_binary(o, DECODER_BASE64, p, n, 1);
        /* fall through: the text dump prints what Kafka's StringDecoder prints */
    case DECODER_STRING: return ob_java_string(o, p, n, as_json);
    case DECODER_HEX:
    case DECODER_BASE64: return ob_binary(o, decoder, p, n, as_json);
    }
    return 1;
}

/* JSON's name for a rendering (describe.encoding_of, kdump.format.records.lossless): null for null. */
static int ob_encoding(outbuf *o, int decoder, int64_t n, int utf8)
{
    if (n < 0)
        return OB_LIT(o, "null");
    switch (decoder) {
    case DECODER_LOSSLESS: return utf8 ? OB_LIT(o, "\"utf8\"") : OB_LIT(o, "\"base64\"");
    case DECODER_STRING: return OB_LIT(o, "\"string\"");
    case DECODER_HEX: return OB_LIT(o, "\"hex\"");
    case DECODER_BASE64: return OB_LIT(o, "\"base64\"");
    }
    return 1;
}

/* The fields a template may name: kdump/render/fields.py's vocabulary, which renders each the
 * same way (tests/test_speedups.py compares the two). */
enum {
    F_POSITION, F_BASE_OFFSET, F_LAST_OFFSET, F_COUNT, F_BASE_SEQUENCE, F_LAST_SEQUENCE,
    F_PRODUCER_ID, F_PRODUCER_EPOCH, F_PARTITION_LEADER_EPOCH, F_IS_TRANSACTIONAL, F_IS_CONTROL,
    F_DELETE_HORIZON_MS, F_TIMESTAMP_TYPE, F_MAX_TIMESTAMP, F_SIZE, F_MAGIC, F_COMPRESSION, F_CRC,
    F_IS_VALID,
    F_FIRST_RECORD_FIELD,
    F_OFFSET = F_FIRST_RECORD_FIELD, F_TIMESTAMP, F_KEY_SIZE, F_VALUE_SIZE, F_SEQUENCE,
    F_HEADER_KEYS, F_HEADERS, F_KEY, F_KEY_ENCODING, F_VALUE, F_VALUE_ENCODING, F_CONTENT,
    F_CONTENT_FIRST, F_CONTENT_FIRST_SCALA,
    N_FIELDS
};

static const char *const field_names[N_FIELDS] = {
    "position", "base_offset", "last_offset", "count", "base_sequence", "last_sequence",
    "producer_id", "producer_epoch", "partition_leader_epoch", "is_transactional", "is_control",
    "delete_horizon_ms", "timestamp_type", "max_timestamp", "size", "magic", "compression",
    "crc", "is_valid",
    "offset", "timestamp", "key_size", "value_size", "sequence", "header_keys", "headers", "key",
    "key_encoding", "value", "value_encoding", "content", "content_first", "content_first_scala",
};

/* Fields with no text rendering, or no JSON one (fields.py renders neither either). */
static int field_allowed(int field, int as_json, int record)
{
    if (field >= F_FIRST_RECORD_FIELD && !record)
        return 0;
    if (record && field < F_FIRST_RECORD_FIELD && field != F_TIMESTAMP_TYPE)
        return 0;
    if (as_json)
        return field != F_CONTENT && field != F_CONTENT_FIRST && field != F_CONTENT_FIRST_SCALA;
    return field != F_HEADERS && field != F_KEY && field != F_VALUE && field != F_KEY_ENCODING &&
           field != F_VALUE_ENCODING;
}

#define MAX_OPS 64

/* A parsed template: literal text, then a field (-1 after the last literal). */
typedef struct {
    char *text; /* the literals, unescaped, one after another */
    int n;
    struct {
        Py_ssize_t at, len;
        int field;
    } ops[MAX_OPS];
} template_t;

static void template_free(template_t *t)
{
    PyMem_Free(t->text);
    t->text = NULL;
}

/* str.format_map's syntax, as far as the templates use it: {name}, {{ and }}. */
static int template_parse(PyObject *obj, template_t *t, int as_json, int record)
{
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (s == NULL)
        return -1;
    t->text = PyMem_Malloc((size_t)n + 1);
    if (t->text == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t out = 0, lit = 0;
    t->n = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i < n && (s[i] == '{' || s[i] == '}') && i + 1 < n && s[i + 1] == s[i]) {
            t->text[out++] = s[i++];
            continue;
        }
        if (i < n && s[i] == '}')
            goto bad;
        if (i < n && s[i] != '{') {
            t->text[out++] = s[i];
            continue;
        }
        int field = -1;
        if (i < n) {
            const char *close = memchr(s + i + 1, '}', (size_t)(n - i - 1));
            if (close == NULL)
                goto bad;
            size_t len = (size_t)(close - (s + i + 1));
            for (int f = 0; f < N_FIELDS; f++)
                if (strlen(field_names[f]) == len && memcmp(field_names[f], s + i + 1, len) == 0)
                    field = f;
            if (field < 0 || !field_allowed(field, as_json, record)) {
                PyErr_Format(PyExc_ValueError, "template field {%.*s} is not one kdump renders here",
                             (int)len, s + i + 1);
                template_free(t);
                return -1;
            }
            i = close - s;
        }
        if (t->n == MAX_OPS) {
            PyErr_SetString(PyExc_ValueError, "template has too many fields");
            template_free(t);
            return -1;
        }
        t->ops[t->n].at = lit;
        t->ops[t->n].len = out - lit;
        t->ops[t->n].field = field;
        t->n++;
        lit = out;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "template: a single { or } outside a field");
    template_free(t);
    return -1;
}

/* The walk's columns (a tuple of WALK_COLUMNS int64 buffers), held until release_columns. */
static int get_walk_columns(PyObject *columns, Py_buffer *views, const int64_t **cols,
                            Py_ssize_t *n)
{
    if (!PyTuple_Check(columns) || PyTuple_Size(columns) != WALK_COLUMNS) {
        PyErr_SetString(PyExc_TypeError, "columns: a tuple of the walk's columns");
        return -1;
    }
    PyObject *objs[WALK_COLUMNS];
    for (int c = 0; c < WALK_COLUMNS; c++)
        objs[c] = PyTuple_GetItem(columns, c);
    return get_columns(objs, views, cols, WALK_COLUMNS, n);
}

/* One batch's header, read from the walk's columns. */
typedef struct {
    int64_t position, base_offset, last_offset, size, epoch, magic, crc, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
        base_sequence, records_count, valid;
} batch_row;

static void batch_row_at(const int64_t *const *cols, Py_ssize_t i, batch_row *b)
{
    int64_t *dst = &b->position;
    for (int c = 0; c < WALK_COLUMNS; c++)
        dst[c] = cols[c][i];
}

static const char *const codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

static int ob_bool(outbuf *o, int v) { return v ? OB_LIT(o, "true") : OB_LIT(o, "false"); }

static int ob_name(outbuf *o, const char *name, int as_json)
{
    Py_ssize_t n = (Py_ssize_t)strlen(name);
    if (!as_json)
        return ob_put(o, name, n);
    return OB_LIT(o, "\"") < 0 || ob_put(o, name, n) < 0 || OB_LIT(o, "\"") < 0 ? -1 : 0;
}

/* DefaultRecordBatch.incrementSequence, as kdump.format.batch.increment_sequence. */
static int64_t last_sequence(const batch_row *b)
{
    if (b->base_sequence == -1)
        return -1;
    if (b->base_sequence > INT32_MAX - b->last_offset_delta)
        return b->last_offset_delta - (INT32_MAX - b->base_sequence) - 1;
    return b->base_sequence + b->last_offset_delta;
}

static int batch_field(outbuf *o, int field, const batch_row *b, int as_json)
{
    switch (field) {
    case F_POSITION: return ob_int(o, b->position);
    case F_BASE_OFFSET: return ob_int(o, b->base_offset);
    case F_LAST_OFFSET: return ob_int(o, b->last_offset);
    case F_COUNT: return ob_int(o, b->records_count);
    case F_BASE_SEQUENCE: return ob_int(o, b->base_sequence);
    case F_LAST_SEQUENCE: return ob_int(o, last_sequence(b));
    case F_PRODUCER_ID: return ob_int(o, b->producer_id);
    case F_PRODUCER_EPOCH: return ob_int(o, b->producer_epoch);
    case F_PARTITION_LEADER_EPOCH: return ob_int(o, b->epoch);
    case F_IS_TRANSACTIONAL: return ob_bool(o, (b->attributes & 0x10) != 0);
    case F_IS_CONTROL: return ob_bool(o, (b->attributes & 0x20) != 0);
    case F_DELETE_HORIZON_MS:
        if (!(b->attributes & 0x40))
            return as_json ? OB_LIT(o, "null") : OB_LIT(o, "OptionalLong.empty");
        if (as_json)
            return ob_int(o, b->base_timestamp);
        return OB_LIT(o, "OptionalLong[") < 0 || ob_int(o, b->base_timestamp) < 0 ||
                       OB_LIT(o, "]") < 0
                   ? -1
                   : 0;
    case F_TIMESTAMP_TYPE:
        return ob_name(o, b->attributes & 0x08 ? "LogAppendTime" : "CreateTime", as_json);
    case F_MAX_TIMESTAMP: return ob_int(o, b->max_timestamp);
    case F_SIZE: return ob_int(o, b->size);
    case F_MAGIC: return ob_int(o, b->magic);
    case F_COMPRESSION: {
        int codec = (int)(b->attributes & 7);
        if (codec <= 4)
            return ob_name(o, codec_names[codec], as_json);
        char name[16];
        snprintf(name, sizeof(name), "unknown(%d)", codec);
        return ob_name(o, name, as_json);
    }
    case F_CRC: return ob_int(o, b->crc);
    case F_IS_VALID: return ob_bool(o, b->valid == 1);
    }
    PyErr_SetString(PyExc_SystemError, "kdump: a batch template names a record field");
    return -1;
}

/* How a run is rendered: text or JSON, the two templates, the decoders, the state carried
 * from record to record (the last offset, for DumpLogSegments' non-consecutive offsets). */
typedef struct {
    int as_json, key_decoder, value_decoder;
    template_t batch, record;
    int deep;
    int64_t last_offset;
    PyObject *gaps; /* (last offset, next offset) pairs where records are not consecutive */
    const uint8_t *checked; /* the bytes valid_utf8 last looked at (a key's or value's, asked */
    int64_t checked_size;   /* again for its encoding), and its answer */
    int checked_utf8;
    int64_t max_headers; /* more headers in a record: the Python renderer's (which refuses it:
                          * kdump.format.records.max_headers) */
} render_ctx;

/* valid_utf8, once for a key's or value's text and its encoding. */
static int rc_utf8(render_ctx *rc, const uint8_t *p, int64_t n)
{
    if (p != rc->checked || n != rc->checked_size) {
        rc->checked = p;
        rc->checked_size = n;
        rc->checked_utf8 = valid_utf8(p, n);
    }
    return rc->checked_utf8;
}

/* The key/payload text of the text dump: " key: K payload: V" (each only when not null);
 * first: after "| " (no metadata before it); scala: the Scala tool's " payload:" even first. */
static int content(outbuf *o, const render_ctx *rc, const record_view *rec, int first, int scala)
{
    const char *prefix = first ? "| " : " ";
    Py_ssize_t plen = first ? 2 : 1;
    if (rec->key_size >= 0) {
        if (ob_put(o, prefix, plen) < 0 || OB_LIT(o, "key: ") < 0)
            return -1;
        int r = ob_decoded(o, rc->key_decoder, rec->key, rec->key_size, 0, 0);
        if (r)
            return r;
        prefix = " ";
        plen = 1;
    }
    if (rec->value_size >= 0) {
        if (scala) {
            prefix = " ";
            plen = 1;
        }
        if (ob_put(o, prefix, plen) < 0 || OB_LIT(o, "payload: ") < 0)
            return -1;
        return ob_decoded(o, rc->value_decoder, rec->value, rec->value_size, 0, 0);
    }
    return 0;
}

/* A key, value or header value in JSON: null, or the decoder's text (fields.py's _encoded). */
static int json_content(outbuf *o, render_ctx *rc, int decoder, const uint8_t *p, int64_t n)
{
    if (n < 0)
        return OB_LIT(o, "null");
    int utf8 = decoder == DECODER_LOSSLESS && rc_utf8(rc, p, n);
    return ob_decoded(o, decoder, p, n, 1, utf8);
}

static int json_encoding(outbuf *o, render_ctx *rc, int decoder, const uint8_t *p, int64_t n)
{
    int utf8 = n >= 0 && decoder == DECODER_LOSSLESS && rc_utf8(rc, p, n);
    return ob_encoding(o, decoder, n, utf8);
}

/* headerKeys: [k,...] in text, ["k",...] in JSON; headers: [{"key","value","value_encoding"},
 * ...] (fields.py's _headers: the value decoder, which in C is always a built-in one). */
static int headers_field(outbuf *o, int field, render_ctx *rc, const record_view *rec)
{
    int as_json = rc->as_json, objects = field == F_HEADERS;
    const uint8_t *h = rec->headers;
    if (as_json && OB_LIT(o, "[") < 0)
        return -1;
    for (int64_t i = 0; i < rec->header_count; i++) {
        header_view hv;
        next_header(&h, &hv);
        if (i && OB_LIT(o, ",") < 0)
            return -1;
        if (objects && OB_LIT(o, "{\"key\":") < 0)
            return -1;
        if (ob_java_string(o, hv.key, hv.key_size, as_json) < 0)
            return -1;
        if (!objects)
            continue;
        int r = -1;
        if (OB_LIT(o, ",\"value\":") < 0 ||
            (r = json_content(o, rc, rc->value_decoder, hv.value, hv.value_size)) != 0 ||
            OB_LIT(o, ",\"value_encoding\":") < 0 ||
            (r = json_encoding(o, rc, rc->value_decoder, hv.value, hv.value_size)) != 0 ||
            OB_LIT(o, "}") < 0)
            return r > 0 ? r : -1;
    }
    return as_json ? OB_LIT(o, "]") : 0;
}

/* A record field; 1 where this record needs the Python renderer, -1 on error. */
static int record_field(outbuf *o, int field, render_ctx *rc, const batch_row *b,
                        const record_view *rec)
{
    int as_json = rc->as_json;
    switch (field) {
    case F_TIMESTAMP_TYPE: return batch_field(o, field, b, as_json);
    case F_OFFSET: return ob_int(o, rec->offset);
    case F_TIMESTAMP: return ob_int(o, rec->timestamp);
    case F_KEY_SIZE: return ob_int(o, rec->key_size < 0 ? -1 : rec->key_size);
    case F_VALUE_SIZE: return ob_int(o, rec->value_size < 0 ? -1 : rec->value_size);
    case F_SEQUENCE: return ob_int(o, rec->sequence);
    case F_HEADER_KEYS:
    case F_HEADERS: return headers_field(o, field, rc, rec);
    case F_KEY: return json_content(o, rc, rc->key_decoder, rec->key, rec->key_size);
    case F_KEY_ENCODING: return json_encoding(o, rc, rc->key_decoder, rec->key, rec->key_size);
    case F_VALUE: return json_content(o, rc, rc->value_decoder, rec->value, rec->value_size);
    case F_VALUE_ENCODING:
        return json_encoding(o, rc, rc->value_decoder, rec->value, rec->value_size);
    case F_CONTENT: return content(o, rc, rec, 0, 0);
    case F_CONTENT_FIRST: return content(o, rc, rec, 1, 0);
    case F_CONTENT_FIRST_SCALA: return content(o, rc, rec, 1, 1);
    }
    PyErr_SetString(PyExc_SystemError, "kdump: a record template names a batch field");
    return -1;
}

static int render_template(outbuf *o, const template_t *t, render_ctx *rc,
                           const batch_row *b, const record_view *rec)
{
    for (int k = 0; k < t->n; k++) {
        if (t->ops[k].len && ob_put(o, t->text + t->ops[k].at, t->ops[k].len) < 0)
            return -1;
        int field = t->ops[k].field;
        if (field < 0)
            continue;
        int r = rec == NULL ? batch_field(o, field, b, rc->as_json)
                            : record_field(o, field, rc, b, rec);
        if (r)
            return r;
    }
    return OB_LIT(o, "\n");
}

/* The lines of records *next on of a batch from *pos in `payload` (its records, decompressed
 * or in place), until the batch's last or until the output reaches max_output bytes; *pos and
 * *next then say where to go on. 1 where the Python renderer must do the rest (from record
 * *next), -1 on error. At least one record is rendered (the output may pass max_output by
 * that one), so a caller going on from *next always moves. */
static int render_records(outbuf *o, render_ctx *rc, const batch_row *b, const uint8_t *payload,
                          Py_ssize_t size, Py_ssize_t *pos, int64_t *next, Py_ssize_t max_output)
{
    batch_context ctx = {b->base_offset, b->base_timestamp, b->max_timestamp,
                         (b->attributes & 0x08) != 0, (int32_t)b->base_sequence};
    reader rd = {payload, size, OK, 0, 0};
    /* one record at least, after the batch line: every call goes on */
    for (int64_t done = 0; *next < b->records_count && (done == 0 || o->len < max_output);
         (*next)++, done++) {
        record_view rec;
        Py_ssize_t at = *pos;
        if (parse_record(&rd, &at, &ctx, &rec) < 0 || rec.header_count > rc->max_headers)
            return 1; /* the Python decoder says what is wrong, after the records before */
        Py_ssize_t mark = o->len;
        int r = render_template(o, &rc->record, rc, b, &rec);
        if (r) {
            o->len = mark; /* this record is the Python renderer's */
            return r;
        }
        int64_t following;
        /* DumpLogSegments' non-consecutive offsets: reported with the text dump only */
        if (!rc->as_json && rc->last_offset != -1 &&
            (__builtin_add_overflow(rc->last_offset, 1, &following) || rec.offset != following)) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)rc->last_offset,
                                           (long long)rec.offset);
            if (pair == NULL || PyList_Append(rc->gaps, pair) < 0) {
                Py_XDECREF(pair);
                return -1;
            }
            Py_DECREF(pair);
        }
        rc->last_offset = rec.offset;
        *pos = at;
    }
    return *next < b->records_count || *pos == size ? 0 : 1;
}

/* The batch line and the lines of all its records; 1 where the Python renderer must do this
 * batch, -1 on error. */
static int render_batch(outbuf *o, render_ctx *rc, const batch_row *b, const uint8_t *payload,
                        Py_ssize_t size)
{
    int r = render_template(o, &rc->batch, rc, b, NULL);
    if (r || !rc->deep)
        return r;
    if (b->records_count < 0)
        return 1;
    Py_ssize_t pos = 0;
    int64_t next = 0;
    return render_records(o, rc, b, payload, size, &pos, &next, PY_SSIZE_T_MAX);
}

/* Arguments shared by render_batches and render_payload. */
static int render_ctx_init(render_ctx *rc, int as_json, PyObject *batch_template,
                           PyObject *record_template, int key_decoder, int value_decoder,
                           long long last_offset)
{
    memset(rc, 0, sizeof(*rc));
    rc->as_json = as_json;
    rc->max_headers = INT64_MAX;
    rc->key_decoder = key_decoder;
    rc->value_decoder = value_decoder;
    rc->last_offset = last_offset;
    rc->deep = record_template != Py_None;
    if (template_parse(batch_template, &rc->batch, as_json, 0) < 0)
        return -1;
    if (rc->deep && template_parse(record_template, &rc->record, as_json, 1) < 0) {
        template_free(&rc->batch);
        return -1;
    }
    rc->gaps = PyList_New(0);
    if (rc->gaps == NULL) {
        template_free(&rc->batch);
        template_free(&rc->record);
        return -1;
    }
    return 0;
}

static void render_ctx_free(render_ctx *rc)
{
    template_free(&rc->batch);
    template_free(&rc->record);
    Py_CLEAR(rc->gaps);
}

/* render_batches(buf, columns, start, as_json, batch_template, record_template or None,
 *                key_decoder, value_decoder, last_offset, max_output)
 *   -> RenderedRun(data, next_index, last_offset, gaps: non-consecutive (last, next) pairs,
 *                  invalid: batches whose CRC fails)
 * The lines of the run's batches from `start` (columns: the walk's, in WALK_COLUMNS order),
 * with the records of each (record_template given) read in place; it stops before a batch
 * the Python renderer must do: a legacy message, and with records a compressed or control
 * batch, or records it cannot render (damage, what only Python models), and after the batch that takes its output past max_output bytes (memory stays
 * bounded whatever the run's size). */
static PyObject *py_render_batches(PyObject *self, PyObject *args)
{
    PyObject *buf_obj, *columns, *batch_template, *record_template;
    Py_ssize_t start;
    int as_json, key_decoder, value_decoder;
    long long last_offset;
    Py_ssize_t max_output;
    long long max_headers = INT64_MAX;
    if (!PyArg_ParseTuple(args, "OOnpOOiiLn|L", &buf_obj, &columns, &start, &as_json,
                          &batch_template, &record_template, &key_decoder, &value_decoder,
                          &last_offset, &max_output, &max_headers))
        return NULL;
    render_ctx rc;
    if (render_ctx_init(&rc, as_json, batch_template, record_template, key_decoder,
                        value_decoder, last_offset) < 0)
        return NULL;
    rc.max_headers = max_headers;
    Py_buffer views[WALK_COLUMNS], buf;
    const int64_t *cols[WALK_COLUMNS];
    Py_ssize_t n = 0;
    if (get_walk_columns(columns, views, cols, &n) < 0) {
        render_ctx_free(&rc);
        return NULL;
    }
    if (get_view(buf_obj, &buf) < 0) {
        release_columns(views, WALK_COLUMNS);
        render_ctx_free(&rc);
        return NULL;
    }
    outbuf o = ob_take(max_output);
    Py_ssize_t i = start < 0 ? n : start, invalid = 0;
    int failed = 0;
    for (; i < n && o.len < max_output; i++) {
        batch_row b;
        batch_row_at(cols, i, &b);
        if (b.magic != 2 || (rc.deep && ((b.attributes & 0x27) || b.size > max_output)) ||
            b.position < 0 || b.size < V2_HEADER_SIZE || b.position > buf.len - b.size)
            break; /* legacy, compressed, control, records rendered a slice at a time: the
                    * Python renderer's */
        Py_ssize_t mark = o.len, gaps = PyList_Size(rc.gaps);
        int64_t last = rc.last_offset;
        int r = render_batch(&o, &rc, &b, (const uint8_t *)buf.buf + b.position + V2_HEADER_SIZE,
                             (Py_ssize_t)(b.size - V2_HEADER_SIZE));
        if (r < 0) {
            failed = 1;
            break;
        }
        if (r > 0) { /* undo this batch: Python renders all of it */
            o.len = mark;
            rc.last_offset = last;
            if (PyList_SetSlice(rc.gaps, gaps, PyList_Size(rc.gaps), NULL) < 0)
                failed = 1;
            break;
        }
        invalid += b.valid == 0;
    }
    release_view(&buf);
    release_columns(views, WALK_COLUMNS);
    PyObject *result = NULL;
    if (!failed) {
        PyObject *data = PyBytes_FromStringAndSize(o.data ? o.data : "", o.len);
        if (data != NULL)
            result = named_result(RENDERED_RUN, "(NnLOn)", data, i, (long long)rc.last_offset,
                                  rc.gaps, invalid);
    }
    ob_give(&o);
    render_ctx_free(&rc);
    return result;
}

/* render_payload(payload, columns, index, as_json, batch_template, record_template,
 *                key_decoder, value_decoder, last_offset[, position, first, max_output])
 *   -> None (the Python renderer must do this batch, from record `first` on) or
 *      RenderedPayload(data, last_offset, gaps, position, next_record)
 * Batch `index` of the run with the records of `payload` (a compressed batch's records,
 * decompressed by the caller, or a large batch's in place): its line (`first` 0), then its
 * records from record `first` at `position` in the payload, until the output passes
 * max_output bytes, so the lines of a batch of millions of records (a decompression bomb) come
 * a slice at a time; the next call goes on from the next position and record (the batch's
 * record count: done). */
static PyObject *py_render_payload(PyObject *self, PyObject *args)
{
    PyObject *payload_obj, *columns, *batch_template, *record_template;
    Py_ssize_t index, pos = 0, max_output = PY_SSIZE_T_MAX;
    long long first = 0;
    int as_json, key_decoder, value_decoder;
    long long last_offset, max_headers = INT64_MAX;
    if (!PyArg_ParseTuple(args, "OOnpOOiiL|nLnL", &payload_obj, &columns, &index, &as_json,
                          &batch_template, &record_template, &key_decoder, &value_decoder,
                          &last_offset, &pos, &first, &max_output, &max_headers))
        return NULL;
    if (record_template == Py_None) {
        PyErr_SetString(PyExc_TypeError, "render_payload renders records: a record template");
        return NULL;
    }
    if (pos < 0 || first < 0) {
        PyErr_SetString(PyExc_ValueError, "render_payload: position and first are >= 0");
        return NULL;
    }
    render_ctx rc;
    if (render_ctx_init(&rc, as_json, batch_template, record_template, key_decoder,
                        value_decoder, last_offset) < 0)
        return NULL;
    rc.max_headers = max_headers;
    Py_buffer views[WALK_COLUMNS], payload;
    const int64_t *cols[WALK_COLUMNS];
    Py_ssize_t n = 0;
    if (get_walk_columns(columns, views, cols, &n) < 0) {
        render_ctx_free(&rc);
        return NULL;
    }
    if (index < 0 || index >= n || get_view(payload_obj, &payload) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_IndexError, "render_payload: no such batch in the run");
        release_columns(views, WALK_COLUMNS);
        render_ctx_free(&rc);
        return NULL;
    }
    batch_row b;
    batch_row_at(cols, index, &b);
    release_columns(views, WALK_COLUMNS);
    outbuf o = ob_take(max_output);
    int64_t next = first;
    int r = b.magic == 2 && !(b.attributes & 0x20) && b.records_count >= 0 && pos <= payload.len
                ? 0
                : 1;
    if (r == 0 && first == 0)
        r = render_template(&o, &rc.batch, &rc, &b, NULL);
    if (r == 0)
        r = render_records(&o, &rc, &b, payload.buf, payload.len, &pos, &next, max_output);
    release_view(&payload);
    PyObject *result = NULL;
    if (r > 0 && next == first)
        result = Py_NewRef(Py_None);
    else if (r >= 0) {
        /* where the Python renderer must go on after lines already rendered: what came
         * first, then None from the next call */
        PyObject *data = PyBytes_FromStringAndSize(o.data ? o.data : "", o.len);
        if (data != NULL)
            result = named_result(RENDERED_PAYLOAD, "(NLOnL)", data, (long long)rc.last_offset,
                                  rc.gaps, pos, (long long)next);
    }
    ob_give(&o);
    render_ctx_free(&rc);
    return result;
}

/* ------------------------------------------------------------------ verify --deep */

/* Whether the records of a v2 batch (payload: its records, decompressed) hold nothing verify's
 * deep checks report: every record decodes and they fill the payload exactly, each offset lies
 * inside the batch, and with CreateTime the largest timestamp is the batch's max timestamp.
 * *records: how many. 1 when clean, 0 when the Python checks must look (they word it). */
static int records_clean(const batch_row *b, const uint8_t *payload, Py_ssize_t size,
                         int64_t *records)
{
    if (b->records_count < 0)
        return 0;
    int append_time = (b->attributes & 0x08) != 0;
    batch_context ctx = {b->base_offset, b->base_timestamp, b->max_timestamp, append_time,
                         (int32_t)b->base_sequence};
    reader rd = {payload, size, OK, 0, 0};
    Py_ssize_t pos = 0;
    int64_t max_ts = -1;
    for (int64_t i = 0; i < b->records_count; i++) {
        record_view rec;
        if (parse_record(&rd, &pos, &ctx, &rec) < 0)
            return 0;
        if (rec.offset < b->base_offset || rec.offset > b->last_offset)
            return 0;
        if (rec.timestamp > max_ts)
            max_ts = rec.timestamp;
    }
    if (pos != size)
        return 0;
    if (!append_time && b->records_count > 0 && max_ts != b->max_timestamp)
        return 0;
    *records += b->records_count;
    return 1;
}

/* deep_check(buf, columns, start, payload or None) -> DeepChecked(next_index, records, flagged)
 * verify --deep over the walk's columns: the uncompressed v2 batches from `start`, records
 * read in place, up to the first batch the Python code must open (compressed: it decompresses
 * and calls again with the payload for that one batch; legacy). Clean batches only add to the
 * record count; the others are flagged for the Python checks, which report them. */
static PyObject *py_deep_check(PyObject *self, PyObject *args)
{
    PyObject *buf_obj, *columns, *payload_obj;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "OOnO", &buf_obj, &columns, &start, &payload_obj))
        return NULL;
    Py_buffer views[WALK_COLUMNS], buf;
    const int64_t *cols[WALK_COLUMNS];
    Py_ssize_t n = 0;
    if (get_walk_columns(columns, views, cols, &n) < 0)
        return NULL;
    int given = payload_obj != Py_None;
    if (get_view(given ? payload_obj : buf_obj, &buf) < 0) {
        release_columns(views, WALK_COLUMNS);
        return NULL;
    }
    PyObject *flagged = PyList_New(0);
    int64_t records = 0;
    Py_ssize_t i = start < 0 ? n : start;
    for (; flagged != NULL && i < n; i++) {
        batch_row b;
        batch_row_at(cols, i, &b);
        int clean;
        if (given) {
            clean = b.magic == 2 && records_clean(&b, buf.buf, buf.len, &records);
        } else {
            if (b.magic != 2 || (b.attributes & 7) || b.position < 0 ||
                b.size < V2_HEADER_SIZE || b.position > buf.len - b.size)
                break; /* the Python code opens this one */
            clean = records_clean(&b, (const uint8_t *)buf.buf + b.position + V2_HEADER_SIZE,
                                  (Py_ssize_t)(b.size - V2_HEADER_SIZE), &records);
        }
        if (!clean && append_index(flagged, i) < 0)
            Py_CLEAR(flagged);
        if (given) {
            i++;
            break;
        }
    }
    release_view(&buf);
    release_columns(views, WALK_COLUMNS);
    if (flagged == NULL)
        return NULL;
    return named_result(DEEP_CHECKED, "(nLN)", i, (long long)records, flagged);
}

/* ------------------------------------------------------------------ index checks, streaming */

/* The index checks of kdump.checks.indexes gather, during the walk, only the batches the
 * index entries name (a position of the offset index, an offset of the time index), so verify
 * holds a few values per index entry instead of per batch. */

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The absolute offset of a relative one; INT64_MAX where it passes int64 (Python's offset is
 * then above every log offset, and so is INT64_MAX). */
static int64_t absolute_offset(int64_t base, int64_t rel, int *past)
{
    int64_t o;
    *past = __builtin_add_overflow(base, rel, &o);
    return *past ? INT64_MAX : o;
}

/* index_keys(index, used, base_offset, time_index) -> bytes: the sorted distinct int64 keys
 * the first `used` entries name: positions of an offset index, offsets of a time index. */
static PyObject *py_index_keys(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t used;
    long long base;
    int time_index;
    Py_buffer index;
    if (!PyArg_ParseTuple(args, "OnLp", &obj, &used, &base, &time_index) ||
        get_view(obj, &index) < 0)
        return NULL;
    Py_ssize_t width = time_index ? TIME_INDEX_ENTRY : OFFSET_INDEX_ENTRY;
    if (used < 0 || used > index.len / width)
        used = used < 0 ? 0 : index.len / width;
    int64_t *keys = PyMem_Malloc(sizeof(int64_t) * (size_t)(used ? used : 1));
    if (keys == NULL) {
        release_view(&index);
        return PyErr_NoMemory();
    }
    const uint8_t *p = index.buf;
    for (Py_ssize_t i = 0; i < used; i++, p += width) {
        int past;
        keys[i] = time_index ? absolute_offset(base, be32s(p + TIME_INDEX_OFFSET_AT), &past)
                              : be32s(p + OFFSET_INDEX_POSITION_AT);
    }
    release_view(&index);
    /* a sound index is already in order: sort only one that is not */
    Py_ssize_t i = 1;
    while (i < used && keys[i - 1] <= keys[i])
        i++;
    if (i < used)
        qsort(keys, (size_t)used, sizeof(int64_t), cmp_int64);
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < used; i++)
        if (n == 0 || keys[n - 1] != keys[i])
            keys[n++] = keys[i];
    PyObject *out = PyBytes_FromStringAndSize((const char *)keys, n * (Py_ssize_t)sizeof(int64_t));
    PyMem_Free(keys);
    return out;
}

#define POSITION_ROW 5 /* position, base offset, last offset, previous batch's last, has one */
#define OFFSET_ROW 5   /* offset, base offset, last offset, max timestamp, max before it */

/* The fields of a gather state, read by name: state.cursor_p... into s[GS_...]; -1 and a
 * TypeError naming the field where one is missing or not an int64. */
static int read_gather_state(PyObject *state, long long s[N_GATHER_STATE])
{
    for (int i = 0; i < N_GATHER_STATE; i++) {
        PyObject *v = PyObject_GetAttr(state, gather_state_names[i]);
        s[i] = v == NULL ? -1 : PyLong_AsLongLong(v);
        Py_XDECREF(v);
        if (s[i] == -1 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "gather: the state's %s is not an int64",
                         gather_state_fields[i].name);
            return -1;
        }
    }
    return 0;
}

/* gather(positions, base_offsets, last_offsets, max_timestamps, wanted_positions,
 *        wanted_offsets, position_rows, offset_rows, state) -> GatherState
 * One run of the walk against the sorted keys of index_keys: a row for each wanted position
 * where a batch starts (with the batch before it), and for each wanted offset the first batch
 * whose last offset reaches it (with the largest max timestamp of the batches before it),
 * written into the row arrays (int64, room for a row per wanted key: each is met at most once)
 * after the rows already there. The state (gather_state_fields) is read by name and handed
 * back as a GatherState. */
static PyObject *py_gather(PyObject *self, PyObject *args)
{
    PyObject *objs[6], *out_objs[2], *state;
    long long s[N_GATHER_STATE];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &out_objs[0], &out_objs[1], &state))
        return NULL;
    long long cursor_p = 0, has_prev, prev_last, cursor_o = 0, before;
    long long c_has, c_base, c_last, c_maxts, c_before, c_prev_last, rising;
    Py_ssize_t prow_n, orow_n;
    Py_buffer views[6], outs[2];
    const int64_t *col[6];
    Py_ssize_t lens[6];
    for (int c = 0; c < 6; c++)
        if (get_column(objs[c], &views[c], &col[c], &lens[c]) < 0) {
            release_columns(views, c);
            return NULL;
        }
    for (int k = 0; k < 2; k++)
        if (PyObject_GetBuffer(out_objs[k], &outs[k], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0 ||
            (outs[k].len > 0 && (uintptr_t)outs[k].buf % sizeof(int64_t) != 0)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "gather: aligned writable row arrays");
            else
                k--; /* this one was not taken */
            while (k >= 0)
                PyBuffer_Release(&outs[k--]);
            release_columns(views, 6);
            return NULL;
        }
    if (read_gather_state(state, s) < 0) {
        release_columns(views, 6);
        PyBuffer_Release(&outs[0]);
        PyBuffer_Release(&outs[1]);
        return NULL;
    }
    cursor_p = s[GS_CURSOR_P], has_prev = s[GS_HAS_PREV], prev_last = s[GS_PREV_LAST];
    cursor_o = s[GS_CURSOR_O], before = s[GS_BEFORE];
    prow_n = (Py_ssize_t)s[GS_PROW_N], orow_n = (Py_ssize_t)s[GS_OROW_N];
    c_has = s[GS_HAS_RAISED], c_base = s[GS_RAISED_BASE], c_last = s[GS_RAISED_LAST];
    c_maxts = s[GS_RAISED_MAX_TS], c_before = s[GS_RAISED_BEFORE];
    c_prev_last = s[GS_RAISED_PREV_LAST], rising = s[GS_RISING];
    Py_ssize_t n = lens[0];
    for (int c = 1; c < 4; c++)
        if (lens[c] < n)
            n = lens[c];
    const int64_t *wp = col[4], *wo = col[5];
    Py_ssize_t np = lens[4], no = lens[5];
    int64_t *prow = outs[0].buf, *orow = outs[1].buf;
    Py_ssize_t prow_room = outs[0].len / (POSITION_ROW * 8), orow_room = outs[1].len / (OFFSET_ROW * 8);
    if (cursor_p < 0 || cursor_p > np)
        cursor_p = np;
    if (cursor_o < 0 || cursor_o > no)
        cursor_o = no;
    if (prow_n < 0 || prow_n > prow_room)
        prow_n = prow_room;
    if (orow_n < 0 || orow_n > orow_room)
        orow_n = orow_room;
    /* A key is met once in ~32 small batches: the loop keeps the running values few, so they
     * stay in registers. The last batch that raised the max timestamp is kept by its number
     * and the two values only the moment knows; its columns are read once, after the loop. */
    const int64_t *positions = col[0], *bases = col[1], *lasts = col[2], *maxtss = col[3];
    Py_ssize_t raised = -1;
    int64_t raised_before = 0, raised_prev_last = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t pos = positions[j], last = lasts[j], maxts = maxtss[j];
        if (cursor_p < np && wp[cursor_p] <= pos) {
            while (cursor_p < np && wp[cursor_p] < pos)
                cursor_p++;
            if (cursor_p < np && wp[cursor_p] == pos && prow_n < prow_room) {
                int64_t *row = prow + prow_n++ * POSITION_ROW;
                row[0] = pos, row[1] = bases[j], row[2] = last, row[3] = prev_last;
                row[4] = has_prev;
                cursor_p++;
            }
        }
        while (cursor_o < no && wo[cursor_o] <= last && orow_n < orow_room) {
            int64_t *row = orow + orow_n++ * OFFSET_ROW;
            row[0] = wo[cursor_o], row[1] = bases[j], row[2] = last, row[3] = maxts;
            row[4] = before;
            cursor_o++;
        }
        if (maxts > before) {
            raised = j, raised_before = before;
            raised_prev_last = has_prev ? prev_last : INT64_MIN;
            before = maxts;
        }
        if (has_prev && last <= prev_last)
            rising = 0;
        has_prev = 1;
        prev_last = last;
    }
    if (raised >= 0) {
        c_has = 1, c_base = bases[raised], c_last = lasts[raised], c_maxts = maxtss[raised];
        c_before = raised_before, c_prev_last = raised_prev_last;
    }
    release_columns(views, 6);
    PyBuffer_Release(&outs[0]);
    PyBuffer_Release(&outs[1]);
    s[GS_CURSOR_P] = cursor_p, s[GS_HAS_PREV] = has_prev, s[GS_PREV_LAST] = prev_last;
    s[GS_CURSOR_O] = cursor_o, s[GS_BEFORE] = before;
    s[GS_PROW_N] = prow_n, s[GS_OROW_N] = orow_n;
    s[GS_HAS_RAISED] = c_has, s[GS_RAISED_BASE] = c_base, s[GS_RAISED_LAST] = c_last;
    s[GS_RAISED_MAX_TS] = c_maxts, s[GS_RAISED_BEFORE] = c_before;
    s[GS_RAISED_PREV_LAST] = c_prev_last, s[GS_RISING] = rising;
    PyObject *out = PyStructSequence_New(result_types[GATHER_STATE]);
    for (int i = 0; out != NULL && i < N_GATHER_STATE; i++) {
        PyObject *v = PyLong_FromLongLong(s[i]);
        if (v == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyStructSequence_SetItem(out, i, v);
    }
    return out;
}

/* The row of `key` among rows of `width` int64s sorted by their first, or NULL. */
static const int64_t *find_row(const int64_t *rows, Py_ssize_t count, int width, int64_t key)
{
    Py_ssize_t lo = 0, hi = count;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (rows[mid * width] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && rows[lo * width] == key ? rows + lo * width : NULL;
}

/* find_row for keys asked in rising order, as a sound index asks them: the row after the last
 * one found is tried first (*hint: its number), the binary search only where it misses. */
static const int64_t *find_next_row(const int64_t *rows, Py_ssize_t count, int width,
                                    int64_t key, Py_ssize_t *hint)
{
    Py_ssize_t next = *hint + 1;
    const int64_t *row = next < count && rows[next * width] == key
                             ? rows + next * width
                             : find_row(rows, count, width, key);
    if (row != NULL)
        *hint = (row - rows) / width;
    return row;
}

/* offset_index_check(index, used, base_offset, position_rows, valid_bytes, last_log)
 *   -> (entries to check one by one, multi-batch entries, first multi-batch entry or -1,
 *       least distance between an entry's position and the one before's, the first's from 0)
 * The fast test of kdump.checks.indexes: each entry against the batch gathered at its
 * position; the distance serves the density check (INT64_MAX: no entries). */
static PyObject *py_offset_index_check(PyObject *self, PyObject *args)
{
    PyObject *index_obj, *rows_obj;
    Py_ssize_t used, n;
    long long base, valid_bytes, last_log;
    Py_buffer index, rows_view;
    const int64_t *rows;
    if (!PyArg_ParseTuple(args, "OnLOLL", &index_obj, &used, &base, &rows_obj, &valid_bytes,
                          &last_log) ||
        get_view(index_obj, &index) < 0)
        return NULL;
    if (get_column(rows_obj, &rows_view, &rows, &n) < 0) {
        release_view(&index);
        return NULL;
    }
    n /= POSITION_ROW;
    if (used < 0 || used > index.len / OFFSET_INDEX_ENTRY)
        used = used < 0 ? 0 : index.len / OFFSET_INDEX_ENTRY;
    PyObject *flagged = PyList_New(0);
    Py_ssize_t multi = 0, first_multi = -1;
    int64_t prev_o = 0, prev_p = 0, least_gap = INT64_MAX;
    Py_ssize_t hint = -1;
    const uint8_t *p = index.buf;
    for (Py_ssize_t i = 0; flagged != NULL && i < used; i++, p += OFFSET_INDEX_ENTRY) {
        int64_t rel = be32s(p), pos = be32s(p + OFFSET_INDEX_POSITION_AT);
        if (pos - prev_p < least_gap) /* the first entry's: from byte 0 */
            least_gap = pos - prev_p;
        int past;
        int64_t o = absolute_offset(base, rel, &past);
        const int64_t *row = find_next_row(rows, n, POSITION_ROW, pos, &hint);
        if (past || (i && (o <= prev_o || pos <= prev_p)) || rel < 0 || o > last_log ||
            pos >= valid_bytes || row == NULL || (row[4] && row[3] >= o)) {
            if (append_index(flagged, i) < 0)
                Py_CLEAR(flagged);
        } else if (row[2] != o) {
            if (first_multi < 0)
                first_multi = i;
            multi++;
        }
        prev_o = o;
        prev_p = pos;
    }
    release_view(&index);
    PyBuffer_Release(&rows_view);
    if (flagged == NULL)
        return NULL;
    return Py_BuildValue("(NnnL)", flagged, multi, first_multi, (long long)least_gap);
}

/* time_index_check(index, used, base_offset, offset_rows) -> entries to check one by one
 * The fast test of kdump.checks.indexes: each entry against the batch holding its offset. */
static PyObject *py_time_index_check(PyObject *self, PyObject *args)
{
    PyObject *index_obj, *rows_obj;
    Py_ssize_t used, n;
    long long base;
    Py_buffer index, rows_view;
    const int64_t *rows;
    if (!PyArg_ParseTuple(args, "OnLO", &index_obj, &used, &base, &rows_obj) ||
        get_view(index_obj, &index) < 0)
        return NULL;
    if (get_column(rows_obj, &rows_view, &rows, &n) < 0) {
        release_view(&index);
        return NULL;
    }
    n /= OFFSET_ROW;
    if (used < 0 || used > index.len / TIME_INDEX_ENTRY)
        used = used < 0 ? 0 : index.len / TIME_INDEX_ENTRY;
    PyObject *flagged = PyList_New(0);
    int64_t prev_ts = 0, prev_o = 0;
    Py_ssize_t hint = -1;
    const uint8_t *p = index.buf;
    for (Py_ssize_t i = 0; flagged != NULL && i < used; i++, p += TIME_INDEX_ENTRY) {
        int64_t ts = be64s(p);
        int past;
        int64_t o = absolute_offset(base, be32s(p + TIME_INDEX_OFFSET_AT), &past);
        const int64_t *row = past ? NULL : find_next_row(rows, n, OFFSET_ROW, o, &hint);
        if ((i && (ts <= prev_ts || o < prev_o)) || row == NULL || row[1] > o || row[3] != ts ||
            row[4] > ts) {
            if (append_index(flagged, i) < 0)
                Py_CLEAR(flagged);
        }
        prev_ts = ts;
        prev_o = o;
    }
    release_view(&index);
    PyBuffer_Release(&rows_view);
    return flagged;
}

/* ------------------------------------------------------------------ advise */

static PyObject *mmap_type; /* mmap.mmap, found when the module loads */

/* The advice kdump gives: MADV_NORMAL, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED and
 * MADV_POPULATE_READ (Linux 5.14+; 22, whatever the headers here know). Others could do more
 * than advise (MADV_REMOVE frees a shared mapping's file blocks). */
static int advice_allowed(int advice)
{
#ifdef HAVE_MADVISE
    return advice == MADV_NORMAL || advice == MADV_SEQUENTIAL || advice == MADV_WILLNEED ||
           advice == MADV_DONTNEED || advice == 22;
#else
    return 1;
#endif
}

/* advise(buf, start, end, advice) -> 0 or an errno value
 * madvise() over the pages holding buf[start:end] of a memory map, without the GIL: the walk's
 * read-ahead thread populates the next window (MADV_POPULATE_READ) and hands back the pages
 * behind the walk (MADV_DONTNEED) while the walk's own thread checks CRCs. The errno is
 * returned, not raised: an advice the kernel does not know (EINVAL) only ends the read-ahead.
 * `buf` must be an mmap.mmap (its pages are the map's alone; MADV_DONTNEED over a bytes
 * object's would zero the heap around it, issue 27) and the advice one of advice_allowed. */
static PyObject *py_advise(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t start, end;
    int advice;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onni", &obj, &start, &end, &advice))
        return NULL;
    if (mmap_type == NULL || !PyObject_TypeCheck(obj, (PyTypeObject *)mmap_type)) {
        /* the type's name as the stable ABI gives it (no tp_name there; PyType_GetName
         * is 3.11's, and 3.10 builds this file too) */
        PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
        if (name != NULL) {
            PyErr_Format(PyExc_TypeError, "advise: buf must be an mmap.mmap, not %U", name);
            Py_DECREF(name);
        }
        return NULL;
    }
    if (!advice_allowed(advice)) {
        PyErr_Format(PyExc_ValueError, "advise: advice %d is not one kdump gives", advice);
        return NULL;
    }
    if (get_view(obj, &view) < 0)
        return NULL;
    if (start < 0)
        start = 0;
    if (end > view.len)
        end = view.len;
    int err = 0;
#ifdef HAVE_MADVISE
    if (start < end) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t from = ((uintptr_t)view.buf + (uintptr_t)start) & ~(page - 1);
        uintptr_t to = (uintptr_t)view.buf + (uintptr_t)end;
        Py_BEGIN_ALLOW_THREADS
        if (madvise((void *)from, (size_t)(to - from), advice) != 0)
            err = errno;
        Py_END_ALLOW_THREADS
    }
#else
    err = ENOSYS;
#endif
    release_view(&view);
    return PyLong_FromLong(err);
}

/* ------------------------------------------------------------------ page cache */

#if defined(__linux__)
#include <sys/stat.h>
#include <sys/syscall.h>
#define HAVE_PAGE_CACHE_CALLS 1
/* cachestat(2), Linux 6.5+: one number on every architecture (asm-generic's table) */
#define SYS_CACHESTAT 451
struct kdump_cachestat_range {
    uint64_t off, len;
};
struct kdump_cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
#endif

/* cached_pages(fd, start, size) -> pages of the file's bytes [start, start + size) the page
 * cache holds (cachestat(2), which counts a large folio at once), or -errno where the kernel
 * says no (-ENOSYS: no cachestat before Linux 6.5). kdump.storage.reading asks it per 8 MiB
 * span of a segment it is about to read (the page-cache guard). */
static PyObject *py_cached_pages(PyObject *self, PyObject *args)
{
    int fd;
    long long start, size;
    if (!PyArg_ParseTuple(args, "iLL", &fd, &start, &size))
        return NULL;
#ifdef HAVE_PAGE_CACHE_CALLS
    struct kdump_cachestat_range range = {(uint64_t)start, (uint64_t)size};
    struct kdump_cachestat found = {0, 0, 0, 0, 0};
    if (start < 0 || size < 0)
        return PyLong_FromLong(-EINVAL);
    if (syscall(SYS_CACHESTAT, fd, &range, &found, 0) != 0)
        return PyLong_FromLong(-errno);
    return PyLong_FromUnsignedLongLong(found.nr_cache);
#else
    return PyLong_FromLong(-ENOSYS);
#endif
}

/* fstat(2) through syscall(2): glibc 2.33 made fstat a symbol of its own (fstat64@GLIBC_2.33),
 * which a manylinux_2_17 wheel may not need (auditwheel refuses it); the kernel's struct stat
 * is glibc's on the 64-bit architectures the wheels are built for */
#ifdef HAVE_PAGE_CACHE_CALLS
static int file_status(int fd, struct stat *status)
{
#if defined(SYS_fstat) && (defined(__x86_64__) || defined(__aarch64__))
    return (int)syscall(SYS_fstat, fd, status);
#else
    return fstat(fd, status);
#endif
}
#endif

/* mincore(fd, start, size) -> mincore(2)'s vector for the file's bytes [start, start + size)
 * (start page aligned; no further than the file's end: a size past it asks for no vector of
 * pages that are not there): a byte per page, bit 0 set where the page is cached; None where
 * the file cannot be mapped or the call fails. The file is mapped for the call alone. */
static PyObject *py_mincore(PyObject *self, PyObject *args)
{
    int fd;
    long long start, size;
    if (!PyArg_ParseTuple(args, "iLL", &fd, &start, &size))
        return NULL;
#ifdef HAVE_PAGE_CACHE_CALLS
    long page = sysconf(_SC_PAGESIZE);
    struct stat status;
    if (start < 0 || size <= 0 || page <= 0 || start % page != 0 || file_status(fd, &status) != 0)
        Py_RETURN_NONE;
    if (size > (long long)status.st_size - start)
        size = (long long)status.st_size - start;
    if (size <= 0)
        Py_RETURN_NONE;
    Py_ssize_t pages = (Py_ssize_t)((size + page - 1) / page);
    PyObject *vector = PyBytes_FromStringAndSize(NULL, pages);
    if (vector == NULL)
        return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AsString(vector);
    int ok = 0;
    Py_BEGIN_ALLOW_THREADS
    void *addr = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (addr != MAP_FAILED) {
        ok = mincore(addr, (size_t)size, out) == 0;
        munmap(addr, (size_t)size);
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        Py_DECREF(vector);
        Py_RETURN_NONE;
    }
    return vector;
#else
    Py_RETURN_NONE;
#endif
}

/* ------------------------------------------------------------------ the log cleaner */

/* Kafka's Cleaner, its hot loops (kdump/log_cleaner.py is the reference, and says what each
 * step follows): the key map (SkimpyOffsetMap: MD5 hashes in slots of 24 bytes, probed as
 * positionOf does), built over batches whose records all count (omap_put_run,
 * omap_put_records), and the filter over batches of records (clean_run, clean_records):
 * which records stay (Cleaner.shouldRetainRecord), and the batch as MemoryRecords.filterTo
 * writes it (copied whole, or rebuilt by MemoryRecordsBuilder's rules). Whatever these do not
 * model (control and transactional batches, another magic, compression for the run-level
 * walk, a batch left empty that the producer state may keep, a header key Java would not
 * read back as it is, bytes that do not parse) is handed back to the Python code. */

/* MD5 (RFC 1321): SkimpyOffsetMap's hash of a key; its 64 steps written out. */
#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define MD5_STEP(f, a, b, c, d, x, t, s)                                                        \
    (a) += f((b), (c), (d)) + (x) + (uint32_t)(t);                                             \
    (a) = ((a) << (s)) | ((a) >> (32 - (s)));                                                 \
    (a) += (b);
#define MD5_STEP1(f, a, b, c, d, k, t, s) MD5_STEP(f, a, b, c, d, w[k], t, s)

/* MD5's 64 steps (RFC 1321): function, the four words in turn, message word, constant, shift. */
#define MD5_STEPS(STEP) \
    STEP(MD5_F, a, b, c, d, 0, 0xd76aa478, 7) \
    STEP(MD5_F, d, a, b, c, 1, 0xe8c7b756, 12) \
    STEP(MD5_F, c, d, a, b, 2, 0x242070db, 17) \
    STEP(MD5_F, b, c, d, a, 3, 0xc1bdceee, 22) \
    STEP(MD5_F, a, b, c, d, 4, 0xf57c0faf, 7) \
    STEP(MD5_F, d, a, b, c, 5, 0x4787c62a, 12) \
    STEP(MD5_F, c, d, a, b, 6, 0xa8304613, 17) \
    STEP(MD5_F, b, c, d, a, 7, 0xfd469501, 22) \
    STEP(MD5_F, a, b, c, d, 8, 0x698098d8, 7) \
    STEP(MD5_F, d, a, b, c, 9, 0x8b44f7af, 12) \
    STEP(MD5_F, c, d, a, b, 10, 0xffff5bb1, 17) \
    STEP(MD5_F, b, c, d, a, 11, 0x895cd7be, 22) \
    STEP(MD5_F, a, b, c, d, 12, 0x6b901122, 7) \
    STEP(MD5_F, d, a, b, c, 13, 0xfd987193, 12) \
    STEP(MD5_F, c, d, a, b, 14, 0xa679438e, 17) \
    STEP(MD5_F, b, c, d, a, 15, 0x49b40821, 22) \
    STEP(MD5_G, a, b, c, d, 1, 0xf61e2562, 5) \
    STEP(MD5_G, d, a, b, c, 6, 0xc040b340, 9) \
    STEP(MD5_G, c, d, a, b, 11, 0x265e5a51, 14) \
    STEP(MD5_G, b, c, d, a, 0, 0xe9b6c7aa, 20) \
    STEP(MD5_G, a, b, c, d, 5, 0xd62f105d, 5) \
    STEP(MD5_G, d, a, b, c, 10, 0x02441453, 9) \
    STEP(MD5_G, c, d, a, b, 15, 0xd8a1e681, 14) \
    STEP(MD5_G, b, c, d, a, 4, 0xe7d3fbc8, 20) \
    STEP(MD5_G, a, b, c, d, 9, 0x21e1cde6, 5) \
    STEP(MD5_G, d, a, b, c, 14, 0xc33707d6, 9) \
    STEP(MD5_G, c, d, a, b, 3, 0xf4d50d87, 14) \
    STEP(MD5_G, b, c, d, a, 8, 0x455a14ed, 20) \
    STEP(MD5_G, a, b, c, d, 13, 0xa9e3e905, 5) \
    STEP(MD5_G, d, a, b, c, 2, 0xfcefa3f8, 9) \
    STEP(MD5_G, c, d, a, b, 7, 0x676f02d9, 14) \
    STEP(MD5_G, b, c, d, a, 12, 0x8d2a4c8a, 20) \
    STEP(MD5_H, a, b, c, d, 5, 0xfffa3942, 4) \
    STEP(MD5_H, d, a, b, c, 8, 0x8771f681, 11) \
    STEP(MD5_H, c, d, a, b, 11, 0x6d9d6122, 16) \
    STEP(MD5_H, b, c, d, a, 14, 0xfde5380c, 23) \
    STEP(MD5_H, a, b, c, d, 1, 0xa4beea44, 4) \
    STEP(MD5_H, d, a, b, c, 4, 0x4bdecfa9, 11) \
    STEP(MD5_H, c, d, a, b, 7, 0xf6bb4b60, 16) \
    STEP(MD5_H, b, c, d, a, 10, 0xbebfbc70, 23) \
    STEP(MD5_H, a, b, c, d, 13, 0x289b7ec6, 4) \
    STEP(MD5_H, d, a, b, c, 0, 0xeaa127fa, 11) \
    STEP(MD5_H, c, d, a, b, 3, 0xd4ef3085, 16) \
    STEP(MD5_H, b, c, d, a, 6, 0x04881d05, 23) \
    STEP(MD5_H, a, b, c, d, 9, 0xd9d4d039, 4) \
    STEP(MD5_H, d, a, b, c, 12, 0xe6db99e5, 11) \
    STEP(MD5_H, c, d, a, b, 15, 0x1fa27cf8, 16) \
    STEP(MD5_H, b, c, d, a, 2, 0xc4ac5665, 23) \
    STEP(MD5_I, a, b, c, d, 0, 0xf4292244, 6) \
    STEP(MD5_I, d, a, b, c, 7, 0x432aff97, 10) \
    STEP(MD5_I, c, d, a, b, 14, 0xab9423a7, 15) \
    STEP(MD5_I, b, c, d, a, 5, 0xfc93a039, 21) \
    STEP(MD5_I, a, b, c, d, 12, 0x655b59c3, 6) \
    STEP(MD5_I, d, a, b, c, 3, 0x8f0ccc92, 10) \
    STEP(MD5_I, c, d, a, b, 10, 0xffeff47d, 15) \
    STEP(MD5_I, b, c, d, a, 1, 0x85845dd1, 21) \
    STEP(MD5_I, a, b, c, d, 8, 0x6fa87e4f, 6) \
    STEP(MD5_I, d, a, b, c, 15, 0xfe2ce6e0, 10) \
    STEP(MD5_I, c, d, a, b, 6, 0xa3014314, 15) \
    STEP(MD5_I, b, c, d, a, 13, 0x4e0811a1, 21) \
    STEP(MD5_I, a, b, c, d, 4, 0xf7537e82, 6) \
    STEP(MD5_I, d, a, b, c, 11, 0xbd3af235, 10) \
    STEP(MD5_I, c, d, a, b, 2, 0x2ad7d2bb, 15) \
    STEP(MD5_I, b, c, d, a, 9, 0xeb86d391, 21)

static void md5_block(uint32_t h[4], const uint8_t *p)
{
    uint32_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    MD5_STEPS(MD5_STEP1)
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

static void md5(const uint8_t *p, size_t n, uint8_t out[16])
{
    uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    size_t done = 0;
    for (; n - done >= 64; done += 64)
        md5_block(h, p + done);
    uint8_t tail[128] = {0};
    size_t rest = n - done;
    memcpy(tail, p + done, rest);
    tail[rest] = 0x80;
    size_t blocks = rest < 56 ? 1 : 2;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[blocks * 64 - 8 + i] = (uint8_t)(bits >> (8 * i));
    for (size_t b = 0; b < blocks; b++)
        md5_block(h, tail + 64 * b);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(h[i] >> (8 * j));
}

/* MD5 of MD5_LANES keys of at most 55 bytes (one block each) at once: as many independent
 * chains of the same 64 steps, in the lanes of vectors where the compiler has them (GCC's and
 * Clang's vector extensions: two SSE2 registers of four lanes on any x86-64), else side by
 * side (the map loops were a third MD5, one key after the other). */
#define MD5_LANES 8
#define MD5_ONE_BLOCK 55

static void md5_block_words(const uint8_t *key, int64_t size, uint32_t words[16])
{
    uint8_t block[64] = {0};
    memcpy(block, key, (size_t)size);
    block[size] = 0x80;
    uint64_t bits = (uint64_t)size * 8;
    for (int i = 0; i < 8; i++)
        block[56 + i] = (uint8_t)(bits >> (8 * i));
    for (int i = 0; i < 16; i++)
        words[i] = (uint32_t)block[4 * i] | (uint32_t)block[4 * i + 1] << 8 |
                   (uint32_t)block[4 * i + 2] << 16 | (uint32_t)block[4 * i + 3] << 24;
}

static void md5_lanes_out(uint32_t h[4], uint8_t *out)
{
    static const uint32_t init[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)((h[i] + init[i]) >> (8 * j));
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(KDUMP_MD5_SIDE_BY_SIDE)
typedef uint32_t md5_vec __attribute__((vector_size(MD5_LANES * 4)));
#define MD5_STEPV(f, a, b, c, d, k, t, s)                                                       \
    (a) += f((b), (c), (d)) + w[k] + (uint32_t)(t);                                            \
    (a) = ((a) << (s)) | ((a) >> (32 - (s)));                                                 \
    (a) += (b);

static void md5_lanes(const uint8_t *const key[MD5_LANES], const int64_t size[MD5_LANES],
                      uint8_t *out[MD5_LANES])
{
    md5_vec w[16];
    for (int l = 0; l < MD5_LANES; l++) {
        uint32_t words[16];
        md5_block_words(key[l], size[l], words);
        for (int i = 0; i < 16; i++)
            w[i][l] = words[i];
    }
    md5_vec a = {0}, b = {0}, c = {0}, d = {0};
    a += 0x67452301;
    b += 0xefcdab89;
    c += 0x98badcfe;
    d += 0x10325476;
    MD5_STEPS(MD5_STEPV)
    for (int l = 0; l < MD5_LANES; l++) {
        uint32_t h[4] = {a[l], b[l], c[l], d[l]};
        md5_lanes_out(h, out[l]);
    }
}
#else
#define MD5_STEP4(f, a, b, c, d, k, t, s)                                                       \
    for (int l = 0; l < MD5_LANES; l++) {                                                       \
        a[l] += f(b[l], c[l], d[l]) + w[k][l] + (uint32_t)(t);                                 \
        a[l] = (a[l] << (s)) | (a[l] >> (32 - (s)));                                           \
        a[l] += b[l];                                                                           \
    }

static void md5_lanes(const uint8_t *const key[MD5_LANES], const int64_t size[MD5_LANES],
                      uint8_t *out[MD5_LANES])
{
    uint32_t w[16][MD5_LANES];
    for (int l = 0; l < MD5_LANES; l++) {
        uint32_t words[16];
        md5_block_words(key[l], size[l], words);
        for (int i = 0; i < 16; i++)
            w[i][l] = words[i];
    }
    uint32_t a[MD5_LANES], b[MD5_LANES], c[MD5_LANES], d[MD5_LANES];
    for (int l = 0; l < MD5_LANES; l++) {
        a[l] = 0x67452301;
        b[l] = 0xefcdab89;
        c[l] = 0x98badcfe;
        d[l] = 0x10325476;
    }
    MD5_STEPS(MD5_STEP4)
    for (int l = 0; l < MD5_LANES; l++) {
        uint32_t h[4] = {a[l], b[l], c[l], d[l]};
        md5_lanes_out(h, out[l]);
    }
}
#endif

#define OMAP_HASH 16
#define OMAP_ENTRY 24

/* SkimpyOffsetMap.positionOf: the slot probed on `attempt` (a byte position). */
static inline int64_t omap_position(const uint8_t *hash, int64_t attempt, int64_t slots)
{
    int64_t window = attempt < OMAP_HASH - 4 ? attempt : OMAP_HASH - 4;
    int64_t linear = attempt > OMAP_HASH - 4 ? attempt - (OMAP_HASH - 4) : 0;
    int32_t probe = (int32_t)(be32(hash + window) + (uint32_t)linear); /* Java's int wraps */
    int64_t positive = probe == INT32_MIN ? 0 : (probe < 0 ? -(int64_t)probe : probe);
    return (positive % slots) * OMAP_ENTRY;
}

static inline int omap_empty(const uint8_t *e)
{
    return (load_le64(e) | load_le64(e + 8) | load_le64(e + 16)) == 0;
}

/* SkimpyOffsetMap.put: 1 a new entry, 0 an entry overwritten, -1 no room (every slot probed
 * holds another key: Kafka refuses a put once the map holds `slots` keys). */
static int omap_put(uint8_t *map, int64_t slots, const uint8_t *hash, int64_t offset)
{
    int64_t attempts = slots + OMAP_HASH - 4;
    for (int64_t attempt = 0; attempt < attempts; attempt++) {
        uint8_t *e = map + omap_position(hash, attempt, slots);
        int empty = omap_empty(e);
        if (empty || memcmp(e, hash, OMAP_HASH) == 0) {
            if (empty)
                memcpy(e, hash, OMAP_HASH);
            for (int i = 0; i < 8; i++)
                e[OMAP_HASH + i] = (uint8_t)((uint64_t)offset >> (56 - 8 * i));
            return empty;
        }
    }
    return -1;
}

/* SkimpyOffsetMap.get: the offset stored for the hash, or -1. */
static int64_t omap_get(const uint8_t *map, int64_t slots, const uint8_t *hash)
{
    int64_t attempts = slots + OMAP_HASH - 4;
    for (int64_t attempt = 0; attempt < attempts; attempt++) {
        const uint8_t *e = map + omap_position(hash, attempt, slots);
        if (omap_empty(e))
            return -1;
        if (memcmp(e, hash, OMAP_HASH) == 0)
            return be64s(e + OMAP_HASH);
    }
    return -1;
}

/* Keys hashed ahead of the probes: each key's MD5 taken and its first slot asked for
 * (prefetched) before the map is probed for the keys before it, so the probes' cache misses
 * (a key's slot lies anywhere in the map's 128 MiB) overlap instead of following one another.
 * The cleaner's map loops were two thirds waiting on them. */
#define HASHED_AHEAD 64

typedef struct {
    uint8_t (*hash)[OMAP_HASH];
    int64_t *offset;
    const uint8_t **key; /* NULL: a record whose key is not looked up (its hash left zero) */
    int64_t *key_size;
    Py_ssize_t n, cap;
} hash_queue;

static int hq_reserve(hash_queue *q, Py_ssize_t extra)
{
    if (q->n + extra <= q->cap)
        return 0;
    Py_ssize_t cap = q->cap ? q->cap : 256;
    while (cap < q->n + extra)
        cap *= 2;
    void *hash = realloc(q->hash, (size_t)cap * OMAP_HASH);
    if (hash != NULL)
        q->hash = hash;
    void *offset = realloc(q->offset, (size_t)cap * sizeof(int64_t));
    if (offset != NULL)
        q->offset = offset;
    void *key = realloc(q->key, (size_t)cap * sizeof(uint8_t *));
    if (key != NULL)
        q->key = key;
    void *key_size = realloc(q->key_size, (size_t)cap * sizeof(int64_t));
    if (key_size != NULL)
        q->key_size = key_size;
    if (hash == NULL || offset == NULL || key == NULL || key_size == NULL)
        return -1;
    q->cap = cap;
    return 0;
}

/* One more record (room reserved): its key (NULL: none to look up) and offset. */
static inline void hq_push(hash_queue *q, const uint8_t *key, int64_t size, int64_t offset)
{
    q->key[q->n] = key;
    q->key_size[q->n] = size;
    q->offset[q->n] = offset;
    q->n++;
}

/* The keys pushed from `from` on hashed (four short ones at a time) and their first slots asked
 * for; the others' hashes zero. */
static void hq_hash(hash_queue *q, Py_ssize_t from, const uint8_t *map, int64_t slots)
{
    const uint8_t *lane_key[MD5_LANES];
    int64_t lane_size[MD5_LANES];
    uint8_t *lane_out[MD5_LANES];
    int lanes = 0;
    for (Py_ssize_t i = from; i < q->n; i++) {
        if (q->key[i] == NULL) {
            memset(q->hash[i], 0, OMAP_HASH);
            continue;
        }
        if (q->key_size[i] > MD5_ONE_BLOCK) {
            md5(q->key[i], (size_t)q->key_size[i], q->hash[i]);
            continue;
        }
        lane_key[lanes] = q->key[i];
        lane_size[lanes] = q->key_size[i];
        lane_out[lanes++] = q->hash[i];
        if (lanes == MD5_LANES) {
            md5_lanes(lane_key, lane_size, lane_out);
            lanes = 0;
        }
    }
    for (int l = 0; l < lanes; l++)
        md5(lane_key[l], (size_t)lane_size[l], lane_out[l]);
    for (Py_ssize_t i = from; i < q->n; i++)
        if (q->key[i] != NULL)
            __builtin_prefetch(map + omap_position(q->hash[i], 0, slots), 1, 3);
}

static void hq_free(hash_queue *q)
{
    free(q->hash);
    free(q->offset);
    free(q->key);
    free(q->key_size);
}

/* The map's bytes: a writable buffer of at least slots * 24 bytes. */
/* The map an entry point is given, checked to hold ``slots``; on failure the buffer the
 * entry point already holds (``held``) is released too. */
static int get_map(PyObject *obj, Py_buffer *view, long long slots, Py_buffer *held)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(held);
        return -1;
    }
    if (slots < 1 || view->len / OMAP_ENTRY < slots) {
        PyBuffer_Release(view);
        PyBuffer_Release(held);
        PyErr_SetString(PyExc_ValueError, "the map holds fewer slots than given");
        return -1;
    }
    return 0;
}

/* A run's entry point: its map (get_map) and the run's end kept within its bytes. */
static int get_run_map(PyObject *obj, Py_buffer *view, long long slots, Py_buffer *buf,
                       Py_ssize_t *end)
{
    if (get_map(obj, view, slots, buf) < 0)
        return -1;
    if (*end > buf->len)
        *end = buf->len;
    return 0;
}

static PyObject *py_omap_put(PyObject *self, PyObject *args)
{
    PyObject *map_obj;
    long long slots, offset;
    Py_buffer map, key;
    if (!PyArg_ParseTuple(args, "OLy*L", &map_obj, &slots, &key, &offset))
        return NULL;
    if (get_map(map_obj, &map, slots, &key) < 0)
        return NULL;
    uint8_t hash[OMAP_HASH];
    md5(key.buf, (size_t)key.len, hash);
    int added = omap_put(map.buf, slots, hash, offset);
    PyBuffer_Release(&key);
    PyBuffer_Release(&map);
    if (added < 0) {
        PyErr_SetString(PyExc_ValueError, "the offset map is full");
        return NULL;
    }
    return PyBool_FromLong(added);
}

static PyObject *py_omap_get(PyObject *self, PyObject *args)
{
    PyObject *map_obj;
    long long slots;
    Py_buffer map, key;
    if (!PyArg_ParseTuple(args, "OLy*", &map_obj, &slots, &key))
        return NULL;
    if (get_map(map_obj, &map, slots, &key) < 0)
        return NULL;
    uint8_t hash[OMAP_HASH];
    md5(key.buf, (size_t)key.len, hash);
    int64_t found = omap_get(map.buf, slots, hash);
    PyBuffer_Release(&key);
    PyBuffer_Release(&map);
    return PyLong_FromLongLong(found);
}

/* Building the map (Cleaner.buildOffsetMapForSegment): each keyed record at or above
 * min_offset put, until the map holds `limit` keys. */
typedef struct {
    uint8_t *map;
    int64_t slots, limit, entries, latest, full_at, min_offset, records;
} map_fill;

/* The records of one batch's payload: 0, 1 (the map is full: full_at set) or -1 (they do not
 * parse: the Python decoder says why). */
static int fill_records(map_fill *f, const uint8_t *payload, Py_ssize_t size, int64_t count,
                        const batch_context *ctx)
{
    reader r = {payload, size, OK, 0, 0};
    Py_ssize_t pos = 0;
    record_view rec;
    for (int64_t i = 0; i < count; i++) /* all of them first: a batch is the map's or Python's */
        if (parse_record(&r, &pos, ctx, &rec) < 0)
            return -1;
    if (count < 0 || pos != size) /* what the Python decoder refuses */
        return -1;
    pos = 0;
    for (int64_t i = 0; i < count; i++) {
        parse_record(&r, &pos, ctx, &rec);
        f->records++;
        if (rec.key_size < 0 || rec.offset < f->min_offset)
            continue;
        if (f->entries >= f->limit) {
            f->full_at = rec.offset;
            return 1;
        }
        uint8_t hash[OMAP_HASH];
        md5(rec.key, (size_t)rec.key_size, hash);
        int added = omap_put(f->map, f->slots, hash, rec.offset);
        if (added < 0) { /* a limit above the map's room: full all the same */
            f->full_at = rec.offset;
            return 1;
        }
        f->entries += added;
        f->latest = rec.offset;
    }
    return 0;
}

static void context_of(const v2_header *h, batch_context *ctx)
{
    ctx->base_offset = h->base_offset;
    ctx->base_timestamp = h->base_timestamp;
    ctx->has_append_time = (h->attributes & 0x08) != 0;
    ctx->append_time = h->max_timestamp;
    ctx->base_sequence = h->base_sequence;
}

/* The records' context of a payload handed in on its own (append_obj: the LogAppendTime, or
 * None; a Python error set when it is no integer). */
static batch_context payload_context(long long base_offset, long long base_timestamp,
                                     PyObject *append_obj)
{
    batch_context ctx = {base_offset, base_timestamp, 0, 0, -1};
    if (append_obj != Py_None) {
        ctx.has_append_time = 1;
        ctx.append_time = PyLong_AsLongLong(append_obj);
    }
    return ctx;
}

/* omap_put_records(map, slots, limit, entries, payload, count, base_offset, base_timestamp,
 * append_time, min_offset) -> (entries, latest put or -1, full_at or -1), or None */
static PyObject *py_omap_put_records(PyObject *self, PyObject *args)
{
    PyObject *map_obj, *append_obj;
    long long slots, limit, entries, count, base_offset, base_timestamp, min_offset;
    Py_buffer map, payload;
    if (!PyArg_ParseTuple(args, "OLLLy*LLLOL", &map_obj, &slots, &limit, &entries, &payload,
                          &count, &base_offset, &base_timestamp, &append_obj, &min_offset))
        return NULL;
    if (get_map(map_obj, &map, slots, &payload) < 0)
        return NULL;
    batch_context ctx = payload_context(base_offset, base_timestamp, append_obj);
    map_fill f = {map.buf, slots, limit, entries, -1, -1, min_offset, 0};
    int status = PyErr_Occurred() ? -2 : fill_records(&f, payload.buf, payload.len, count, &ctx);
    PyBuffer_Release(&payload);
    PyBuffer_Release(&map);
    if (status == -2)
        return NULL;
    if (status < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(LLL)", (long long)f.entries, (long long)f.latest,
                         (long long)f.full_at);
}

/* A batch the run-level walks take whole: magic 2, no compression, neither transactional nor
 * control (those are the Python code's: aborted transactions, markers). */
#define PLAIN_MASK (0x07 | TRANSACTIONAL_OR_CONTROL)

/* The size of the plain batch (no codec, not transactional, not control) at pos, its header
 * read into *h; 0 where there is none the C loops take: not whole, not plain, or counting
 * more records than its payload could hold (a record takes a byte at least). */
static Py_ssize_t plain_batch(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end, v2_header *h)
{
    Py_ssize_t size = v2_batch_size(data, pos, end, INT32_MAX);
    if (size == 0)
        return 0;
    read_v2_header(data + pos, h);
    if ((h->attributes & PLAIN_MASK) != 0 || h->records_count < 0 ||
        h->records_count > size - V2_HEADER_SIZE)
        return 0;
    return size;
}

/* omap_put_run(buf, position, end, map, slots, limit, entries, min_offset) -> (position,
 * entries, latest, full_at, records): the plain batches from position on, until one that is
 * not (the Python code takes it), the end, or a full map (full_at: the record that did not
 * fit). latest: OffsetMap.latestOffset after them (-1: unchanged). */
/* A batch of a run, hashed and waiting for its keys to be put. */
typedef struct {
    Py_ssize_t end;          /* where the next batch begins */
    int64_t last;            /* its last offset */
    Py_ssize_t keys_end;     /* its keys in the queue end here */
    int64_t records;
} queued_batch;

/* The plain batches from *pos, hashed into q (their batch ends into b, at most n_b of them)
 * until HASHED_AHEAD keys wait or a batch the Python code takes comes: how many batches. */
static Py_ssize_t hash_batches(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end,
                               const uint8_t *map, int64_t slots, int64_t min_offset,
                               hash_queue *q, queued_batch *b, Py_ssize_t n_b)
{
    Py_ssize_t n = 0;
    while (n < n_b && pos >= 0 && pos < end && q->n < HASHED_AHEAD) {
        v2_header h;
        Py_ssize_t size = plain_batch(data, pos, end, &h);
        if (size == 0)
            break;
        batch_context ctx;
        context_of(&h, &ctx);
        const uint8_t *payload = data + pos + V2_HEADER_SIZE;
        Py_ssize_t payload_size = size - V2_HEADER_SIZE, at = 0;
        reader r = {payload, payload_size, OK, 0, 0};
        record_view rec;
        int64_t i;
        for (i = 0; i < h.records_count; i++) /* all of them first: the map's or Python's */
            if (parse_record(&r, &at, &ctx, &rec) < 0)
                break;
        if (i < h.records_count || at != payload_size ||
            hq_reserve(q, (Py_ssize_t)h.records_count) < 0)
            break;
        at = 0;
        for (i = 0; i < h.records_count; i++) {
            parse_record(&r, &at, &ctx, &rec);
            if (rec.key_size >= 0 && rec.offset >= min_offset)
                hq_push(q, rec.key, rec.key_size, rec.offset);
        }
        pos += size;
        b[n++] = (queued_batch){pos, h.base_offset + h.last_offset_delta, q->n, h.records_count};
    }
    hq_hash(q, 0, map, slots);
    return n;
}

/* omap_put_run(buf, position, end, map, slots, limit, entries, min_offset) -> (position,
 * entries, latest, full_at, records): the plain batches from position on, until one that is
 * not (the Python code takes it), the end, or a full map (full_at: the record that did not
 * fit). latest: OffsetMap.latestOffset after them (-1: unchanged). */
static PyObject *py_omap_put_run(PyObject *self, PyObject *args)
{
    PyObject *map_obj;
    Py_buffer buf, map;
    Py_ssize_t pos, end;
    long long slots, limit, entries, min_offset;
    if (!PyArg_ParseTuple(args, "y*nnOLLLL", &buf, &pos, &end, &map_obj, &slots, &limit,
                          &entries, &min_offset))
        return NULL;
    if (get_run_map(map_obj, &map, slots, &buf, &end) < 0)
        return NULL;
    const uint8_t *data = buf.buf;
    uint8_t *omap = map.buf;
    int64_t latest = -1, full_at = -1, records = 0, count = entries;
    hash_queue q = {NULL, NULL, NULL, NULL, 0, 0};
    queued_batch batches[HASHED_AHEAD];
    Py_BEGIN_ALLOW_THREADS
    while (full_at < 0) {
        q.n = 0;
        Py_ssize_t n = hash_batches(data, pos, end, omap, slots, min_offset, &q, batches,
                                    HASHED_AHEAD);
        if (n == 0)
            break;
        Py_ssize_t k = 0;
        for (Py_ssize_t j = 0; j < n && full_at < 0; j++) {
            for (; k < batches[j].keys_end; k++) {
                int added = count >= limit ? -1 : omap_put(omap, slots, q.hash[k], q.offset[k]);
                if (added < 0) {
                    full_at = q.offset[k];
                    break;
                }
                count += added;
                latest = q.offset[k];
            }
            if (full_at >= 0)
                break;
            if (batches[j].last >= min_offset)
                latest = batches[j].last;
            records += batches[j].records;
            pos = batches[j].end;
        }
    }
    Py_END_ALLOW_THREADS
    hq_free(&q);
    PyBuffer_Release(&map);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nLLLL)", pos, (long long)count, (long long)latest, (long long)full_at,
                         (long long)records);
}

/* The filter: what Cleaner.cleanInto's RecordFilter and MemoryRecords.filterTo make of a
 * batch of records. */
typedef struct {
    const uint8_t *map;
    int64_t slots, latest, now;
} clean_ctx;

enum {
    CS_BYTES_READ, CS_MESSAGES_READ, CS_SUPERSEDED, CS_TOMBSTONES, CS_INVALID,
    CS_TOMBSTONES_KEPT, CS_TOMBSTONES_TO_STAMP, CS_REBUILT, CS_MESSAGES_WRITTEN,
    CS_BYTES_WRITTEN, CS_BATCHES_WRITTEN, CS_NEXT_HORIZON, N_CLEAN_STATS
};
/* kdump.log_cleaner.CleanerStats' names, in that order (the Python side checks them) */
static const char *const clean_stat_names[N_CLEAN_STATS] = {
    "bytes_read", "messages_read", "superseded", "tombstones", "invalid_messages_read",
    "tombstones_kept", "tombstones_to_stamp", "rebuilt_batches", "messages_written",
    "bytes_written", "batches_written", "next_delete_horizon",
};

typedef struct {
    int64_t kept, tombstones_kept, max_ts, first_ts;
} kept_counts;

/* Which records of a batch stay (shouldRetainRecord): keep[i] set for each; the counts into
 * stats and *k. 0, or -1: the records do not parse, or a kept record's header key is not what
 * Java reads back byte for byte (the Python code takes the batch; nothing counted). */
static int decide(const clean_ctx *c, const uint8_t *payload, Py_ssize_t size, int64_t count,
                  const batch_context *ctx, int retain_deletes, uint8_t *keep, int64_t *stats,
                  kept_counts *k, const uint8_t (*hashes)[OMAP_HASH])
{
    reader r = {payload, size, OK, 0, 0};
    Py_ssize_t pos = 0;
    int64_t local[N_CLEAN_STATS] = {0};
    kept_counts out = {0, 0, -1, 0};
    for (int64_t i = 0; i < count; i++) {
        record_view rec;
        if (parse_record(&r, &pos, ctx, &rec) < 0)
            return -1;
        local[CS_MESSAGES_READ]++;
        int stays;
        if (rec.offset > c->latest)
            stays = 1; /* beyond what the map covers */
        else if (rec.key_size < 0) {
            stays = 0;
            local[CS_INVALID]++;
        } else {
            uint8_t own[OMAP_HASH];
            const uint8_t *hash = own;
            if (hashes != NULL)
                hash = hashes[i];
            else
                md5(rec.key, (size_t)rec.key_size, own);
            int latest_for_key = rec.offset >= omap_get(c->map, c->slots, hash);
            stays = latest_for_key && (rec.value_size >= 0 || retain_deletes);
            if (!latest_for_key)
                local[CS_SUPERSEDED]++;
            else if (!stays)
                local[CS_TOMBSTONES]++;
            else if (rec.value_size < 0)
                local[CS_TOMBSTONES_KEPT]++;
        }
        keep[i] = (uint8_t)stays;
        if (!stays)
            continue;
        if (rec.header_count > 0) {
            const uint8_t *hp = rec.headers;
            for (int64_t j = 0; j < rec.header_count; j++) {
                header_view hv;
                next_header(&hp, &hv);
                if (!valid_utf8(hv.key, hv.key_size))
                    return -1;
            }
        }
        if (out.kept == 0)
            out.first_ts = rec.timestamp;
        out.kept++;
        if (rec.value_size < 0)
            out.tombstones_kept++;
        if (rec.timestamp > out.max_ts)
            out.max_ts = rec.timestamp;
    }
    if (pos != size) /* bytes after the last record: the Python decoder refuses them */
        return -1;
    for (int i = 0; i < N_CLEAN_STATS; i++)
        stats[i] += local[i];
    *k = out;
    return 0;
}

static int ob_varint(outbuf *o, int64_t v)
{
    uint8_t tmp[10];
    uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int len = 0;
    while (n >= 0x80) {
        tmp[len++] = (uint8_t)(n | 0x80);
        n >>= 7;
    }
    tmp[len++] = (uint8_t)n;
    return ob_put(o, tmp, len);
}

static int varint_size(int64_t v)
{
    uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int len = 1;
    while (n >= 0x80) {
        n >>= 7;
        len++;
    }
    return len;
}

/* The kept records as MemoryRecordsBuilder appends them (DefaultRecord.writeTo: attributes 0,
 * deltas from the base offset and base_ts, the headers as they were). */
static int encode_kept(outbuf *o, const uint8_t *payload, Py_ssize_t size, int64_t count,
                       const batch_context *ctx, const uint8_t *keep, int64_t base_ts)
{
    reader r = {payload, size, OK, 0, 0};
    Py_ssize_t pos = 0;
    for (int64_t i = 0; i < count; i++) {
        record_view rec;
        Py_ssize_t start = pos;
        if (parse_record(&r, &pos, ctx, &rec) < 0)
            return -1;
        if (!keep[i])
            continue;
        int64_t ts_delta = rec.timestamp - base_ts, offset_delta = rec.offset - ctx->base_offset;
        const uint8_t *headers_at = rec.header_count > 0 ? rec.headers : NULL;
        int64_t headers_size = headers_at ? (payload + start + rec.size) - headers_at : 0;
        int64_t body = 1 + varint_size(ts_delta) + varint_size(offset_delta) +
                       varint_size(rec.key_size) + (rec.key_size > 0 ? rec.key_size : 0) +
                       varint_size(rec.value_size) + (rec.value_size > 0 ? rec.value_size : 0) +
                       varint_size(rec.header_count) + headers_size;
        static const uint8_t zero = 0;
        if (ob_varint(o, body) < 0 || ob_put(o, &zero, 1) < 0 || ob_varint(o, ts_delta) < 0 ||
            ob_varint(o, offset_delta) < 0 || ob_varint(o, rec.key_size) < 0 ||
            (rec.key_size > 0 && ob_put(o, rec.key, rec.key_size) < 0) ||
            ob_varint(o, rec.value_size) < 0 ||
            (rec.value_size > 0 && ob_put(o, rec.value, rec.value_size) < 0) ||
            ob_varint(o, rec.header_count) < 0 ||
            (headers_size > 0 && ob_put(o, headers_at, headers_size) < 0))
            return -1;
    }
    return 0;
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* DefaultRecordBatch.writeHeader over the records just written at o->data + at (room for the
 * header left there), then the CRC-32C from the attributes on. */
static void write_header(outbuf *o, Py_ssize_t at, const v2_header *h, int16_t attributes,
                         int64_t base_ts, int64_t max_ts, int32_t count)
{
    uint8_t *p = (uint8_t *)o->data + at;
    Py_ssize_t size = o->len - at;
    put_be64(p + BASE_OFFSET_AT, (uint64_t)h->base_offset);
    put_be32(p + BATCH_LENGTH_AT, (uint32_t)(size - LOG_OVERHEAD));
    put_be32(p + PARTITION_LEADER_EPOCH_AT, (uint32_t)h->partition_leader_epoch);
    p[MAGIC_AT] = 2;
    put_be16(p + ATTRIBUTES_AT, (uint16_t)attributes);
    put_be32(p + LAST_OFFSET_DELTA_AT, (uint32_t)h->last_offset_delta);
    put_be64(p + BASE_TIMESTAMP_AT, (uint64_t)base_ts);
    put_be64(p + MAX_TIMESTAMP_AT, (uint64_t)max_ts);
    put_be64(p + PRODUCER_ID_AT, (uint64_t)h->producer_id);
    put_be16(p + PRODUCER_EPOCH_AT, (uint16_t)h->producer_epoch);
    put_be32(p + BASE_SEQUENCE_AT, (uint32_t)h->base_sequence);
    put_be32(p + RECORDS_COUNT_AT, (uint32_t)count);
    put_be32(p + CRC_AT, crc32c(p + ATTRIBUTES_AT, (size_t)(size - ATTRIBUTES_AT)));
}

/* A rebuilt batch's attributes (MemoryRecordsBuilder): its codec, timestamp type,
 * transactional and control bits, and the delete horizon bit when it has one. */
static int16_t rebuilt_attributes(const v2_header *h, int horizon)
{
    return (int16_t)((h->attributes & (0x0F | TRANSACTIONAL_OR_CONTROL)) |
                     (horizon ? DELETE_HORIZON_BIT : 0));
}

/* Kept offsets as [first, last] runs, int64 pairs (CleanedGroup.kept_offsets). */
static int keep_offset(outbuf *ranges, int64_t offset)
{
    int64_t *pairs = (int64_t *)ranges->data;
    Py_ssize_t n = ranges->len / (Py_ssize_t)sizeof(int64_t);
    if (n >= 2 && pairs[n - 1] + 1 == offset) {
        pairs[n - 1] = offset;
        return 0;
    }
    int64_t pair[2] = {offset, offset};
    return ob_put(ranges, pair, sizeof pair);
}

static int keep_offsets(outbuf *ranges, const uint8_t *payload, Py_ssize_t size, int64_t count,
                        const batch_context *ctx, const uint8_t *keep)
{
    reader r = {payload, size, OK, 0, 0};
    Py_ssize_t pos = 0;
    for (int64_t i = 0; i < count; i++) {
        record_view rec;
        if (parse_record(&r, &pos, ctx, &rec) < 0)
            return -1;
        if (keep[i] && keep_offset(ranges, rec.offset) < 0)
            return -1;
    }
    return 0;
}

static PyObject *stats_tuple(const int64_t *stats)
{
    PyObject *t = PyTuple_New(N_CLEAN_STATS);
    for (int i = 0; t != NULL && i < N_CLEAN_STATS; i++) {
        PyObject *v = i == CS_NEXT_HORIZON && stats[i] == INT64_MAX
                          ? Py_NewRef(Py_None)
                          : PyLong_FromLongLong(stats[i]);
        if (v == NULL || PyTuple_SetItem(t, i, v) < 0)
            Py_CLEAR(t);
    }
    return t;
}

static PyObject *outbuf_bytes(outbuf *o)
{
    PyObject *b = PyBytes_FromStringAndSize(o->data ? o->data : "", o->len);
    PyMem_Free(o->data);
    o->data = NULL;
    return b;
}

/* The plain batches from pos, their records' keys the filter looks up hashed into q (a slot a
 * record, zeros for those it does not look up) and their slots asked for, until HASHED_AHEAD
 * keys or n batches: how many batches; record 0 of batch j is q's ahead[j]-th, and ahead[n] is
 * where the last one ends (a position, not an index). */
static Py_ssize_t hash_ahead(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end,
                             const clean_ctx *c, hash_queue *q, Py_ssize_t *ahead, Py_ssize_t n)
{
    Py_ssize_t done = 0, keys = 0;
    while (done < n && keys < HASHED_AHEAD && pos >= 0 && pos < end) {
        v2_header h;
        Py_ssize_t size = plain_batch(data, pos, end, &h);
        if (size == 0 || hq_reserve(q, (Py_ssize_t)h.records_count) < 0)
            break;
        batch_context ctx;
        context_of(&h, &ctx);
        reader r = {data + pos + V2_HEADER_SIZE, size - V2_HEADER_SIZE, OK, 0, 0};
        Py_ssize_t at = 0, first = q->n;
        int64_t i;
        for (i = 0; i < h.records_count; i++) {
            record_view rec;
            if (parse_record(&r, &at, &ctx, &rec) < 0)
                break;
            int lookup = rec.key_size >= 0 && rec.offset <= c->latest;
            hq_push(q, lookup ? rec.key : NULL, rec.key_size, rec.offset);
            keys += lookup;
        }
        if (i < h.records_count) { /* decide() hashes this one itself, and refuses it */
            q->n = first;
            break;
        }
        ahead[done++] = first;
        pos += size;
    }
    ahead[done] = pos;
    hq_hash(q, 0, c->map, c->slots);
    return done;
}

/* clean_run(buf, position, end, map, slots, latest, now, high_watermark, delete_retention_ms,
 * max_output) -> (position, cleaned bytes, kept offsets (int64 [first, last] pairs), stats):
 * the plain batches from position on, filtered as filterTo does, until one the Python code
 * takes (not plain, left empty by a producer's or ending at the high watermark, not modelled
 * here), the end, or max_output bytes written. stats: the counts named clean_stat_names, of
 * the batches done. */
static PyObject *py_clean_run(PyObject *self, PyObject *args)
{
    PyObject *map_obj;
    Py_buffer buf, map;
    Py_ssize_t pos, end, max_output;
    long long slots, latest, now, hw, drm;
    if (!PyArg_ParseTuple(args, "y*nnOLLLLLn", &buf, &pos, &end, &map_obj, &slots, &latest,
                          &now, &hw, &drm, &max_output))
        return NULL;
    if (get_run_map(map_obj, &map, slots, &buf, &end) < 0)
        return NULL;
    const uint8_t *data = buf.buf;
    clean_ctx c = {map.buf, slots, latest, now};
    int64_t stats[N_CLEAN_STATS] = {0};
    stats[CS_NEXT_HORIZON] = INT64_MAX;
    outbuf out = {NULL, 0, 0}, ranges = {NULL, 0, 0};
    uint8_t *keep = NULL;
    Py_ssize_t keep_cap = 0;
    int failed = 0;
    hash_queue q = {NULL, NULL, NULL, NULL, 0, 0};
    Py_ssize_t ahead_end = pos, ahead[HASHED_AHEAD + 1], n_ahead = 0, next = 0;
    Py_BEGIN_ALLOW_THREADS
    while (pos >= 0 && pos < end && out.len < max_output) {
        if (next >= n_ahead) { /* the next batches' keys hashed, their slots asked for */
            q.n = 0;
            n_ahead = hash_ahead(data, pos, end, &c, &q, ahead, HASHED_AHEAD);
            next = 0;
            ahead_end = n_ahead ? ahead[n_ahead] : pos;
        }
        const uint8_t(*hashes)[OMAP_HASH] = next < n_ahead ? q.hash + ahead[next] : NULL;
        next++;
        v2_header h;
        Py_ssize_t size = plain_batch(data, pos, end, &h);
        if (size == 0)
            break;
        if (h.records_count > keep_cap) {
            uint8_t *more = realloc(keep, (size_t)h.records_count);
            if (more == NULL)
                break;
            keep = more;
            keep_cap = h.records_count;
        }
        batch_context ctx;
        context_of(&h, &ctx);
        int has_horizon = (h.attributes & DELETE_HORIZON_BIT) != 0;
        int retain_deletes = !has_horizon || now < h.base_timestamp;
        const uint8_t *payload = data + pos + V2_HEADER_SIZE;
        Py_ssize_t payload_size = size - V2_HEADER_SIZE;
        int64_t batch_stats[N_CLEAN_STATS] = {0};
        kept_counts k;
        if (decide(&c, payload, payload_size, h.records_count, &ctx, retain_deletes, keep,
                   batch_stats, &k, pos < ahead_end ? hashes : NULL) < 0)
            break;
        int64_t next_offset = h.base_offset + h.last_offset_delta + 1;
        if (k.kept == 0 && (h.producer_id != -1 || next_offset == hw))
            break; /* RETAIN_EMPTY, maybe: the producer state's call */
        int stamp = k.tombstones_kept > 0 && !has_horizon;
        Py_ssize_t before = out.len, ranges_before = ranges.len;
        if (k.kept == 0)
            ; /* the batch goes (filterTo keeps no empty batch but those above) */
        else if (k.kept == h.records_count && !stamp) {
            if (ob_put(&out, data + pos, size) < 0) {
                failed = 1;
                break;
            }
        } else {
            int64_t horizon = stamp ? now + drm : (has_horizon ? h.base_timestamp : INT64_MIN);
            int64_t base_ts = horizon != INT64_MIN ? horizon : k.first_ts;
            int64_t max_ts = ctx.has_append_time ? h.max_timestamp : k.max_ts;
            int16_t attributes = rebuilt_attributes(&h, horizon != INT64_MIN);
            static const uint8_t header_room[V2_HEADER_SIZE] = {0};
            if (ob_put(&out, header_room, V2_HEADER_SIZE) < 0 ||
                encode_kept(&out, payload, payload_size, h.records_count, &ctx, keep, base_ts) <
                    0) {
                out.len = before;
                break; /* no memory, or bytes decide() read and this cannot: Python's */
            }
            write_header(&out, before, &h, attributes, base_ts, max_ts, (int32_t)k.kept);
            batch_stats[CS_REBUILT]++;
            if (stamp)
                batch_stats[CS_TOMBSTONES_TO_STAMP] += k.tombstones_kept;
        }
        if (k.kept > 0 &&
            keep_offsets(&ranges, payload, payload_size, h.records_count, &ctx, keep) < 0) {
            out.len = before;
            ranges.len = ranges_before;
            break;
        }
        if (batch_stats[CS_TOMBSTONES_KEPT] > 0 && has_horizon &&
            h.base_timestamp < stats[CS_NEXT_HORIZON])
            stats[CS_NEXT_HORIZON] = h.base_timestamp;
        batch_stats[CS_BYTES_READ] = size;
        batch_stats[CS_MESSAGES_WRITTEN] = k.kept;
        batch_stats[CS_BYTES_WRITTEN] = out.len - before;
        batch_stats[CS_BATCHES_WRITTEN] = out.len > before;
        for (int i = 0; i < N_CLEAN_STATS; i++)
            if (i != CS_NEXT_HORIZON)
                stats[i] += batch_stats[i];
        pos += size;
    }
    Py_END_ALLOW_THREADS
    free(keep);
    hq_free(&q);
    PyBuffer_Release(&map);
    PyBuffer_Release(&buf);
    if (failed || (out.data == NULL && out.cap != 0)) {
        PyMem_Free(out.data);
        PyMem_Free(ranges.data);
        return PyErr_NoMemory();
    }
    PyObject *stats_obj = stats_tuple(stats);
    PyObject *cleaned = outbuf_bytes(&out), *kept = outbuf_bytes(&ranges);
    if (stats_obj == NULL || cleaned == NULL || kept == NULL) {
        Py_XDECREF(stats_obj);
        Py_XDECREF(cleaned);
        Py_XDECREF(kept);
        return NULL;
    }
    return Py_BuildValue("(nNNN)", pos, cleaned, kept, stats_obj);
}

/* clean_records(payload, count, base_offset, base_timestamp, append_time, map, slots, latest,
 * now, horizon, delete_retention_ms) -> None (the Python code's) or (kept, stamped, max
 * timestamp of the kept, base timestamp, records, kept offsets, stats): one batch's records (a
 * compressed batch's, decompressed; a committed transaction's) filtered, for the Python code to
 * finish the batch. horizon: the batch's delete horizon (None: none); stamped: the tombstones
 * kept in a batch stamped now (with now + delete_retention_ms); records: the kept ones
 * re-encoded from the base timestamp (None when the batch stays as it is, or goes). */
static PyObject *py_clean_records(PyObject *self, PyObject *args)
{
    PyObject *map_obj, *append_obj, *horizon_obj;
    Py_buffer payload, map;
    long long count, base_offset, base_timestamp, slots, latest, now, drm;
    if (!PyArg_ParseTuple(args, "y*LLLOOLLLOL", &payload, &count, &base_offset, &base_timestamp,
                          &append_obj, &map_obj, &slots, &latest, &now, &horizon_obj, &drm))
        return NULL;
    if (get_map(map_obj, &map, slots, &payload) < 0)
        return NULL;
    batch_context ctx = payload_context(base_offset, base_timestamp, append_obj);
    int has_horizon = horizon_obj != Py_None;
    int64_t horizon = has_horizon ? PyLong_AsLongLong(horizon_obj) : 0;
    PyObject *result = NULL;
    uint8_t *keep = count > 0 && count <= payload.len ? malloc((size_t)count) : NULL;
    outbuf out = {NULL, 0, 0}, ranges = {NULL, 0, 0};
    int64_t stats[N_CLEAN_STATS] = {0};
    kept_counts k;
    clean_ctx c = {map.buf, slots, latest, now};
    if (PyErr_Occurred())
        goto done;
    if (count < 0 || count > payload.len) { /* a record takes a byte at least: Python's */
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (count > 0 && keep == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int retain_deletes = !has_horizon || now < horizon;
    if (decide(&c, payload.buf, payload.len, count, &ctx, retain_deletes, keep, stats, &k,
               NULL) < 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    stats[CS_NEXT_HORIZON] =
        stats[CS_TOMBSTONES_KEPT] > 0 && has_horizon ? horizon : INT64_MAX;
    if (keep_offsets(&ranges, payload.buf, payload.len, count, &ctx, keep) < 0)
        goto done;
    int stamp = k.tombstones_kept > 0 && !has_horizon;
    int64_t base_ts = stamp ? now + drm : (has_horizon ? horizon : k.first_ts);
    PyObject *records;
    if ((k.kept == count && !stamp) || k.kept == 0)
        records = Py_NewRef(Py_None);
    else {
        if (encode_kept(&out, payload.buf, payload.len, count, &ctx, keep, base_ts) < 0)
            goto done;
        records = outbuf_bytes(&out);
    }
    PyObject *stats_obj = stats_tuple(stats), *kept = outbuf_bytes(&ranges);
    if (records != NULL && stats_obj != NULL && kept != NULL)
        result = Py_BuildValue("(LLLLNNN)", (long long)k.kept,
                               (long long)(stamp ? k.tombstones_kept : 0), (long long)k.max_ts,
                               (long long)base_ts, records, kept, stats_obj);
    else {
        Py_XDECREF(records);
        Py_XDECREF(stats_obj);
        Py_XDECREF(kept);
    }
done:
    free(keep);
    PyMem_Free(out.data);
    PyMem_Free(ranges.data);
    PyBuffer_Release(&map);
    PyBuffer_Release(&payload);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_FASTCALL,
     "crc32c(buf, start=0, end=len(buf)) -> CRC-32C of buf[start:end]"},
    {"hardware_crc", py_hardware_crc, METH_NOARGS,
     "hardware_crc() -> whether CRC-32C runs on the processor's CRC instructions"},
    {"set_hardware_crc", py_set_hardware_crc, METH_O,
     "set_hardware_crc(on) -> the previous setting; off: the table-driven code (tests)"},
    {"advise", py_advise, METH_VARARGS,
     "advise(buf, start, end, advice) -> 0 or errno: madvise() of the pages of buf[start:end], "
     "without the GIL"},
    {"cached_pages", py_cached_pages, METH_VARARGS,
     "cached_pages(fd, start, size) -> pages of the file's [start, start + size) in the page "
     "cache (cachestat), or -errno"},
    {"mincore", py_mincore, METH_VARARGS,
     "mincore(fd, start, size) -> a byte per page of the file's [start, start + size), bit 0 "
     "set where cached; None where it cannot be asked"},
    {"walk_v2", py_walk_v2, METH_VARARGS,
     "walk_v2(buf, start, stop, end, max_size, limit, check_crc, until_invalid) -> "
     "WalkedRun(n, columns, position)"},
    {"count_masked", py_count_masked, METH_VARARGS,
     "count_masked(column, mask) -> how many values of an int64 column have a bit of mask set"},
    {"column_range", py_column_range, METH_VARARGS,
     "column_range(column, stop) -> (min, max) of an int64 column's first stop values, or None"},
    {"flag_batches", py_flag_batches, METH_VARARGS,
     "flag_batches(base_offsets, last_offsets, epochs, magics, valids, producer_ids, "
     "attributes, segment_base, has_prev, prev_last, epoch, producers) -> (flagged, gaps, "
     "first gap, has_prev, prev_last, epoch)"},
    {"index_keys", py_index_keys, METH_VARARGS,
     "index_keys(index, used, base_offset, time_index) -> sorted distinct int64 keys (bytes)"},
    {"gather", py_gather, METH_VARARGS,
     "gather(positions, base_offsets, last_offsets, max_timestamps, wanted_positions, "
     "wanted_offsets, position_rows, offset_rows, state) -> GatherState"},
    {"offset_index_check", py_offset_index_check, METH_VARARGS,
     "offset_index_check(index, used, base_offset, position_rows, valid_bytes, last_log) -> "
     "(flagged entries, multi-batch entries, first multi-batch entry, least position gap)"},
    {"time_index_check", py_time_index_check, METH_VARARGS,
     "time_index_check(index, used, base_offset, offset_rows) -> flagged entries"},
    {"pack_entries", py_pack_entries, METH_VARARGS,
     "pack_entries(firsts, seconds, base_offset, time_index, last_first, last_second) -> "
     "PackedEntries(data, entries, last_first, last_second) or None"},
    {"index_points", py_index_points, METH_VARARGS,
     "index_points(positions, last_offsets, max_timestamps, interval, last_entry, max_ts, "
     "offset_of_max_ts) -> IndexPoints(last_entry, max_ts, offset_of_max_ts, offsets, "
     "positions, timestamps, time_offsets)"},
    {"render_batches", py_render_batches, METH_VARARGS,
     "render_batches(buf, columns, start, as_json, batch_template, record_template, "
     "key_decoder, value_decoder, last_offset, max_output) -> RenderedRun(data, next_index, "
     "last_offset, gaps, invalid)"},
    {"render_payload", py_render_payload, METH_VARARGS,
     "render_payload(payload, columns, index, as_json, batch_template, record_template, "
     "key_decoder, value_decoder, last_offset[, position, first, max_output]) -> None or "
     "RenderedPayload(data, last_offset, gaps, position, next_record)"},
    {"java_utf8", py_java_utf8, METH_O,
     "java_utf8(buf) -> Java's new String(buf, UTF_8) as UTF-8 bytes (the renderer's decoder)"},
    {"deep_check", py_deep_check, METH_VARARGS,
     "deep_check(buf, columns, start, payload) -> DeepChecked(next_index, records, flagged)"},
    {"set_record_class", py_set_record_class, METH_O,
     "set_record_class(Record): the Python Record the C Record prints, pickles and "
     "delegates as"},
    {"v2_records", py_v2_records, METH_VARARGS,
     "v2_records(payload, count, base_offset, base_timestamp, append_time, base_sequence, "
     "record_cls, header_cls[, start, first, max_records, max_bytes, max_headers]) -> None or "
     "(records, position, RecordError or None)"},
    {"omap_put", py_omap_put, METH_VARARGS,
     "omap_put(map, slots, key, offset) -> whether a new entry was made (SkimpyOffsetMap.put)"},
    {"omap_get", py_omap_get, METH_VARARGS,
     "omap_get(map, slots, key) -> the offset stored for key, or -1 (SkimpyOffsetMap.get)"},
    {"omap_put_records", py_omap_put_records, METH_VARARGS,
     "omap_put_records(map, slots, limit, entries, payload, count, base_offset, "
     "base_timestamp, append_time, min_offset) -> None or (entries, latest, full_at)"},
    {"omap_put_run", py_omap_put_run, METH_VARARGS,
     "omap_put_run(buf, position, end, map, slots, limit, entries, min_offset) -> (position, "
     "entries, latest, full_at, records)"},
    {"clean_run", py_clean_run, METH_VARARGS,
     "clean_run(buf, position, end, map, slots, latest, now, high_watermark, "
     "delete_retention_ms, max_output) -> (position, cleaned, kept offsets, stats)"},
    {"clean_records", py_clean_records, METH_VARARGS,
     "clean_records(payload, count, base_offset, base_timestamp, append_time, map, slots, "
     "latest, now, horizon, delete_retention_ms) -> None or (kept, stamped, max_timestamp, "
     "base_timestamp, records, kept offsets, stats)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kdump._speedups", "kdump's optional C fast paths.", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* module.NAME = a tuple of the C side's names, for the Python side to check its own against */
static int add_names(PyObject *m, const char *attr, const char *const *names, int count)
{
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple != NULL && i < count; i++) {
        PyObject *name = PyUnicode_FromString(names[i]);
        if (name == NULL)
            Py_CLEAR(tuple);
        else
            PyTuple_SetItem(tuple, i, name);
    }
    if (tuple == NULL || PyModule_AddObject(m, attr, tuple) < 0) {
        Py_XDECREF(tuple);
        return -1;
    }
    return 0;
}

/* module.LAYOUT = {name: byte offset or size} of the layout enum */
static int add_layout(PyObject *m)
{
    PyObject *dict = PyDict_New();
    for (size_t i = 0; dict != NULL && i < sizeof(layout) / sizeof(layout[0]); i++) {
        PyObject *value = PyLong_FromLong(layout[i].value);
        if (value == NULL || PyDict_SetItemString(dict, layout[i].name, value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    if (dict == NULL || PyModule_AddObject(m, "LAYOUT", dict) < 0) {
        Py_XDECREF(dict);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__speedups(void)
{
    crc_init();
    utf8_tables();
#ifdef HW_CRC_BUILT
    hw_crc_usable = hw_crc_present();
#endif
    have_hw_crc = hw_crc_usable;
    CRecordType = (PyTypeObject *)PyType_FromSpec(&crecord_spec);
    if (CRecordType == NULL)
        return NULL;
    PyObject *mmap_module = PyImport_ImportModule("mmap");
    if (mmap_module == NULL)
        return NULL;
    PyObject *was = mmap_type;
    mmap_type = PyObject_GetAttrString(mmap_module, "mmap");
    Py_XDECREF(was);
    Py_DECREF(mmap_module);
    if (mmap_type == NULL || !PyType_Check(mmap_type)) {
        PyErr_SetString(PyExc_ImportError, "kdump._speedups: mmap.mmap is not a type");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Record", (PyObject *)CRecordType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    RunColumnsType = (PyTypeObject *)PyType_FromSpec(&columns_spec);
    if (m != NULL && (RunColumnsType == NULL ||
                      PyModule_AddObjectRef(m, "RunColumns", (PyObject *)RunColumnsType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef HAVE_CRC_SHARE
    CrcShareType = (PyTypeObject *)PyType_FromSpec(&share_spec);
    if (m != NULL && (CrcShareType == NULL ||
                      PyModule_AddObjectRef(m, "CrcShare", (PyObject *)CrcShareType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
#endif
#ifdef HW_CRC_BUILT
    if (m != NULL && PyModule_AddStringConstant(m, "HARDWARE_CRC", HW_CRC_BUILT) < 0)
        Py_CLEAR(m);
#else
    if (m != NULL && PyModule_AddObjectRef(m, "HARDWARE_CRC", Py_None) < 0)
        Py_CLEAR(m);
#endif
    if (m != NULL && (add_names(m, "WALK_COLUMNS", walk_column_names, WALK_COLUMNS) < 0 ||
                      add_names(m, "RENDER_FIELDS", field_names, N_FIELDS) < 0 ||
                      add_names(m, "RECORD_FIELDS", record_fields, RECORD_FIELDS) < 0 ||
                      add_names(m, "RECORD_FAULTS", record_faults, N_FAULTS) < 0 ||
                      add_names(m, "CLEAN_STATS", clean_stat_names, N_CLEAN_STATS) < 0 ||
                      add_layout(m) < 0 || add_result_types(m) < 0))
        Py_CLEAR(m);
    return m;
}

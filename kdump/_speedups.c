/* kdump._speedups: optional C fast paths for the loops that run once per batch, record or
 * index entry. Each function does the common, well-formed case only and hands anything unusual
 * back to the pure-Python code (kdump/format, kdump/checks), which stays the reference: it
 * produces every finding and error message. tests/test_speedups.py runs both on the same bytes.
 *
 * Every read is bounds-checked against the buffer the caller passed; nothing is written to it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

static void zeros_table(uint32_t (*table)[256], size_t n)
{
    static const uint8_t zero_bytes[8192];
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++)
        basis[bit] = crc_sw(1u << bit, zero_bytes, n);
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (b & (1 << i))
                    v ^= basis[8 * k + i];
            table[k][b] = v;
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
    for (int level = 0; level < BLOCK_LEVELS; level++)
        zeros_table(zeros[level], BLOCKS[level]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HW_CRC_BUILT 1

/* SSE4.2's crc32 instruction has a latency of three cycles and a throughput of one: three
 * independent streams over three adjacent blocks keep it busy, joined with the zeros tables.
 * Long blocks stream from memory best; the shorter ones serve what is left of a batch. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c0 = crc;
    for (int level = 0; level < BLOCK_LEVELS; level++) {
        const size_t block = BLOCKS[level];
        while (n >= 3 * block) {
            uint64_t c1 = 0, c2 = 0;
            const uint8_t *end = p + block;
            do {
                c0 = _mm_crc32_u64(c0, load_le64(p));
                c1 = _mm_crc32_u64(c1, load_le64(p + block));
                c2 = _mm_crc32_u64(c2, load_le64(p + 2 * block));
                p += 8;
            } while (p < end);
            c0 = shift_by_table(zeros[level], (uint32_t)c0) ^ (uint32_t)c1;
            c0 = shift_by_table(zeros[level], (uint32_t)c0) ^ (uint32_t)c2;
            p += 2 * block;
            n -= 3 * block;
        }
    }
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, load_le64(p));
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

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

/* A tuple subclass (a NamedTuple) of n items, filled by the caller; NULL on failure. */
static PyObject *new_tuple_of(PyTypeObject *cls, Py_ssize_t n)
{
    return cls->tp_alloc(cls, n);
}

static int set_ll(PyObject *tuple, Py_ssize_t i, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL)
        return -1;
    PyTuple_SET_ITEM(tuple, i, o);
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

#define LOG_OVERHEAD 12
#define MAGIC_AT 16
#define CRC_AT 17
#define ATTRIBUTES_AT 21
#define V2_HEADER_SIZE 61
#define MIN_V2_BATCH_LENGTH (V2_HEADER_SIZE - LOG_OVERHEAD)
#define V2_FIELDS 14

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
    h->base_offset = be64s(p);
    h->batch_length = be32s(p + 8);
    h->partition_leader_epoch = be32s(p + 12);
    h->magic = (int8_t)p[16];
    h->crc = be32(p + 17);
    h->attributes = be16s(p + 21);
    h->last_offset_delta = be32s(p + 23);
    h->base_timestamp = be64s(p + 27);
    h->max_timestamp = be64s(p + 35);
    h->producer_id = be64s(p + 43);
    h->producer_epoch = be16s(p + 51);
    h->base_sequence = be32s(p + 53);
    h->records_count = be32s(p + 57);
}

/* The length of the well-formed v2 batch at pos (header included), or 0 where iteration
 * needs the Python path: too little left for a header, another magic, a length below the
 * header or above max_size, a batch running past end. */
static Py_ssize_t v2_batch_size(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end,
                                long long max_size)
{
    if (end - pos < V2_HEADER_SIZE || buf[pos + MAGIC_AT] != 2)
        return 0;
    int32_t length = be32s(buf + pos + 8);
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

/* The run's columns, n values each, column after column, as one bytes object. */
static PyObject *columns_bytes(const int64_t *cols, Py_ssize_t stride, Py_ssize_t n)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, WALK_COLUMNS * n * (Py_ssize_t)sizeof(int64_t));
    if (out == NULL)
        return NULL;
    char *dst = PyBytes_AS_STRING(out);
    for (int c = 0; c < WALK_COLUMNS; c++)
        memcpy(dst + c * n * sizeof(int64_t), cols + c * stride, (size_t)n * sizeof(int64_t));
    return out;
}

/* walk_v2(buf, start, stop, end, max_size, limit, check_crc, until_invalid)
 *   -> (n, columns, next position)
 * The C side of kdump.format.walk.LogWalk: up to `limit` consecutive well-formed v2 batches
 * from `start` that start before `stop`, as int64 columns (columns_bytes). It stops, leaving
 * the decision to the Python reference, at 17 bytes or fewer left, another magic, a
 * batch_length below the header or above max_size, a batch running past `end`, and (with
 * until_invalid) a batch whose CRC-32C fails. `valid` is 1 or 0, or -1 without check_crc. */
static PyObject *py_walk_v2(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t start, stop, end, limit;
    long long max_size;
    int check_crc, until_invalid;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnnLnpp", &obj, &start, &stop, &end, &max_size, &limit,
                          &check_crc, &until_invalid) ||
        get_view(obj, &view) < 0)
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
    int64_t *cols = PyMem_Malloc(sizeof(int64_t) * WALK_COLUMNS * (size_t)(limit ? limit : 1));
    if (cols == NULL) {
        release_view(&view);
        return PyErr_NoMemory();
    }
    const uint8_t *buf = view.buf;
    Py_ssize_t pos = start < 0 ? end : start, n = 0;
    while (n < limit && pos < stop) {
        Py_ssize_t size = v2_batch_size(buf, pos, end, max_size);
        if (size == 0)
            break;
        const uint8_t *p = buf + pos;
        int64_t valid = -1;
        if (check_crc) {
            valid = crc32c(p + ATTRIBUTES_AT, (size_t)(size - ATTRIBUTES_AT)) == be32(p + CRC_AT);
            if (!valid && until_invalid)
                break;
        }
        v2_header h;
        read_v2_header(p, &h);
        const int64_t row[WALK_COLUMNS] = {
            pos, h.base_offset, (int64_t)((uint64_t)h.base_offset + (uint64_t)(int64_t)h.last_offset_delta),
            size, h.partition_leader_epoch, h.magic, h.crc, h.attributes, h.last_offset_delta,
            h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence,
            h.records_count, valid,
        };
        for (int c = 0; c < WALK_COLUMNS; c++)
            cols[c * limit + n] = row[c];
        pos += size;
        n++;
    }
    release_view(&view);
    PyObject *data = columns_bytes(cols, limit, n);
    PyMem_Free(cols);
    if (data == NULL)
        return NULL;
    return Py_BuildValue("(nNn)", n, data, pos);
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

/* offset_index_walk(index, used, base_offset, positions, last_offsets, valid_bytes, last_log)
 *   -> (entries to check one by one, multi-batch entries, first multi-batch entry or -1)
 * The fast test of kdump.checks.indexes.check_offset_index, entry by entry. */
static PyObject *py_offset_index_walk(PyObject *self, PyObject *args)
{
    PyObject *index_obj, *objs[2];
    Py_ssize_t used, n;
    long long base, valid_bytes, last_log;
    Py_buffer index, views[2];
    const int64_t *cols[2];
    if (!PyArg_ParseTuple(args, "OnLOOLL", &index_obj, &used, &base, &objs[0], &objs[1],
                          &valid_bytes, &last_log) ||
        get_view(index_obj, &index) < 0)
        return NULL;
    if (get_columns(objs, views, cols, 2, &n) < 0) {
        release_view(&index);
        return NULL;
    }
    const int64_t *positions = cols[0], *lasts = cols[1];
    if (used < 0 || used > index.len / 8)
        used = used < 0 ? 0 : index.len / 8;
    PyObject *flagged = PyList_New(0);
    Py_ssize_t multi = 0, first_multi = -1, j = 0;
    int64_t prev_o = 0, prev_p = 0;
    const uint8_t *p = index.buf;
    for (Py_ssize_t i = 0; flagged != NULL && i < used; i++, p += 8) {
        int64_t rel = be32s(p), pos = be32s(p + 4), o;
        /* past int64, Python's offset is above every log offset: INT64_MAX acts the same,
         * here and as the previous offset of the next entry */
        int past_int64 = __builtin_add_overflow((int64_t)base, rel, &o);
        if (past_int64)
            o = INT64_MAX;
        while (j < n && positions[j] < pos)
            j++;
        if (past_int64 || (i && (o <= prev_o || pos <= prev_p)) || rel < 0 || o > last_log ||
            pos >= valid_bytes || j == n || positions[j] != pos || (j && lasts[j - 1] >= o)) {
            if (append_index(flagged, i) < 0)
                Py_CLEAR(flagged);
        } else if (lasts[j] != o) {
            if (first_multi < 0)
                first_multi = i;
            multi++;
        }
        prev_o = o;
        prev_p = pos;
    }
    release_view(&index);
    release_columns(views, 2);
    if (flagged == NULL)
        return NULL;
    return Py_BuildValue("(Nnn)", flagged, multi, first_multi);
}

/* time_index_walk(index, used, base_offset, base_offsets, last_offsets, max_timestamps)
 *   -> entries to check one by one
 * The fast test of kdump.checks.indexes.check_time_index, entry by entry. */
static PyObject *py_time_index_walk(PyObject *self, PyObject *args)
{
    PyObject *index_obj, *objs[3];
    Py_ssize_t used, n;
    long long base;
    Py_buffer index, views[3];
    const int64_t *cols[3];
    if (!PyArg_ParseTuple(args, "OnLOOO", &index_obj, &used, &base, &objs[0], &objs[1],
                          &objs[2]) ||
        get_view(index_obj, &index) < 0)
        return NULL;
    if (get_columns(objs, views, cols, 3, &n) < 0) {
        release_view(&index);
        return NULL;
    }
    const int64_t *bases = cols[0], *lasts = cols[1], *maxts = cols[2];
    if (used < 0 || used > index.len / 12)
        used = used < 0 ? 0 : index.len / 12;
    PyObject *flagged = PyList_New(0);
    Py_ssize_t k = 0;
    int64_t prev_ts = 0, prev_o = 0, before = -1;
    const uint8_t *p = index.buf;
    for (Py_ssize_t i = 0; flagged != NULL && i < used; i++, p += 12) {
        int64_t ts = be64s(p), o;
        if (__builtin_add_overflow((int64_t)base, (int64_t)be32s(p + 8), &o)) {
            o = INT64_MAX;
            k = n; /* Python's walk passes every batch: this entry and all after are flagged */
        }
        while (k < n && lasts[k] < o) {
            if (maxts[k] > before)
                before = maxts[k];
            k++;
        }
        if ((i && (ts <= prev_ts || o < prev_o)) || k == n || bases[k] > o || maxts[k] != ts ||
            before > ts) {
            if (append_index(flagged, i) < 0)
                Py_CLEAR(flagged);
        }
        prev_ts = ts;
        prev_o = o;
    }
    release_view(&index);
    release_columns(views, 3);
    return flagged;
}

/* index_points(positions, last_offsets, max_timestamps, interval, last_entry, max_ts,
 *              offset_of_max_ts)
 *   -> (last_entry, max_ts, offset_of_max_ts, offsets, positions, timestamps, time_offsets)
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
    result = Py_BuildValue("(LLLy#y#y#y#)", last_entry, max_ts, at_max, (const char *)out, bytes,
                           (const char *)(out + n), bytes, (const char *)(out + 2 * n), bytes,
                           (const char *)(out + 3 * n), bytes);
done:
    PyMem_Free(out);
    release_columns(views, 3);
    return result;
}

/* ------------------------------------------------------------------ v2 records */

/* Why decoding stopped; the Python decoder words the same cases the same way. */
enum { OK = 0, PAST_BATCH, VARINT_TOO_LONG, BAD_LENGTH, FIELD_PAST_RECORD, BAD_HEADER_COUNT,
       BAD_HEADER_KEY, BAD_RECORD_SIZE, UNMODELLED };

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

static PyObject *field_bytes(reader *r, Py_ssize_t *pos, int64_t size, Py_ssize_t end)
{
    if (size < 0)
        Py_RETURN_NONE;
    if (size > end - *pos) {
        r->error = FIELD_PAST_RECORD;
        r->detail = size;
        return NULL;
    }
    PyObject *o = PyBytes_FromStringAndSize((const char *)r->data + *pos, (Py_ssize_t)size);
    *pos += (Py_ssize_t)size;
    return o;
}

static PyObject *read_headers(reader *r, Py_ssize_t *pos, Py_ssize_t end, PyTypeObject *header_cls)
{
    int64_t count = read_varint(r, pos, 5);
    if (r->error)
        return NULL;
    if (count < 0) {
        r->error = BAD_HEADER_COUNT;
        r->detail = count;
        return NULL;
    }
    PyObject *list = PyList_New(0);
    for (int64_t i = 0; list != NULL && i < count; i++) {
        int64_t key_size = read_varint(r, pos, 5);
        if (r->error)
            goto fail;
        if (key_size < 0) {
            r->error = BAD_HEADER_KEY;
            r->detail = key_size;
            goto fail;
        }
        PyObject *key = NULL, *value = NULL, *header = NULL;
        if (key_size > end - *pos) {
            r->error = FIELD_PAST_RECORD;
            r->detail = key_size;
            goto fail;
        }
        key = PyUnicode_DecodeUTF8((const char *)r->data + *pos, (Py_ssize_t)key_size, "replace");
        *pos += (Py_ssize_t)key_size;
        if (key == NULL)
            goto fail;
        int64_t value_size = read_varint(r, pos, 5);
        if (!r->error)
            value = field_bytes(r, pos, value_size, end);
        if (value != NULL)
            header = new_tuple_of(header_cls, 2);
        if (header == NULL) {
            Py_DECREF(key);
            Py_XDECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(header, 0, key);
        PyTuple_SET_ITEM(header, 1, value);
        int rc = PyList_Append(list, header);
        Py_DECREF(header);
        if (rc < 0)
            goto fail;
    }
    if (list == NULL)
        return NULL;
    PyObject *tuple = PyList_AsTuple(list);
    Py_DECREF(list);
    return tuple;
fail:
    Py_XDECREF(list);
    return NULL;
}

typedef struct {
    int64_t base_offset, base_timestamp, append_time;
    int has_append_time;
    int32_t base_sequence;
} batch_context;

/* One record from *pos; NULL with r->error set (or a Python error when r->error is 0). */
static PyObject *read_record(reader *r, Py_ssize_t *pos, const batch_context *ctx,
                             PyTypeObject *record_cls, PyTypeObject *header_cls)
{
    Py_ssize_t start = *pos, p = start;
    int64_t length = read_varint(r, &p, 5);
    if (r->error)
        return NULL;
    if (length < 0 || length > r->size - p) {
        r->error = BAD_LENGTH;
        r->detail = length;
        return NULL;
    }
    Py_ssize_t body = p, end = p + (Py_ssize_t)length;
    if (p >= r->size) {
        r->error = PAST_BATCH;
        return NULL;
    }
    int attributes = r->data[p++];
    int64_t timestamp_delta = read_varint(r, &p, 10);
    int64_t offset_delta = r->error ? 0 : read_varint(r, &p, 5);
    int64_t key_size = r->error ? 0 : read_varint(r, &p, 5);
    if (r->error)
        return NULL;
    PyObject *key = field_bytes(r, &p, key_size, end);
    if (key == NULL)
        return NULL;
    PyObject *value = NULL, *headers = NULL, *record = NULL;
    int64_t value_size = read_varint(r, &p, 5);
    if (!r->error)
        value = field_bytes(r, &p, value_size, end);
    if (value != NULL) {
        if (p < r->size && r->data[p] == 0) {
            headers = PyTuple_New(0);
            p++;
        } else {
            headers = read_headers(r, &p, end, header_cls);
        }
    }
    if (headers != NULL && p != end) {
        r->error = BAD_RECORD_SIZE;
        r->detail = length;
        r->detail2 = p - body;
    }
    int64_t offset = 0, timestamp = ctx->append_time, sequence = -1;
    if (headers != NULL && !r->error) {
        if (__builtin_add_overflow(ctx->base_offset, offset_delta, &offset) ||
            (!ctx->has_append_time &&
             __builtin_add_overflow(ctx->base_timestamp, timestamp_delta, &timestamp)))
            r->error = UNMODELLED;
    }
    if (headers != NULL && !r->error) {
        int64_t room = (int64_t)INT32_MAX - ctx->base_sequence;
        if (ctx->base_sequence != -1)
            sequence = offset_delta <= room ? ctx->base_sequence + offset_delta
                                            : offset_delta - room - 1;
        record = new_tuple_of(record_cls, 10);
    }
    if (record == NULL) {
        Py_DECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        return NULL;
    }
    PyTuple_SET_ITEM(record, 0, PyLong_FromLongLong(offset));
    PyTuple_SET_ITEM(record, 1, PyLong_FromLongLong(timestamp));
    PyTuple_SET_ITEM(record, 2, key);
    PyTuple_SET_ITEM(record, 3, value);
    PyTuple_SET_ITEM(record, 4, headers);
    PyTuple_SET_ITEM(record, 5, PyLong_FromLongLong(sequence));
    PyTuple_SET_ITEM(record, 6, PyLong_FromLong(attributes));
    PyTuple_SET_ITEM(record, 7, PyLong_FromSsize_t(end - start));
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(record, 8, Py_None);
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(record, 9, Py_None);
    for (int i = 0; i < 10; i++)
        if (PyTuple_GET_ITEM(record, i) == NULL) {
            Py_DECREF(record);
            return NULL;
        }
    *pos = end;
    return record;
}

static PyObject *error_reason(const reader *r)
{
    switch (r->error) {
    case VARINT_TOO_LONG:
        return PyUnicode_FromString("varint is too long");
    case BAD_LENGTH:
        return PyUnicode_FromFormat("record length %lld runs past the batch",
                                    (long long)r->detail);
    case FIELD_PAST_RECORD:
        return PyUnicode_FromFormat("field of %lld bytes runs past the record",
                                    (long long)r->detail);
    case BAD_HEADER_COUNT:
        return PyUnicode_FromFormat("invalid number of record headers %lld",
                                    (long long)r->detail);
    case BAD_HEADER_KEY:
        return PyUnicode_FromFormat("invalid negative header key size %lld",
                                    (long long)r->detail);
    case BAD_RECORD_SIZE:
        return PyUnicode_FromFormat("expected to read %lld bytes in record payload, read %lld",
                                    (long long)r->detail, (long long)r->detail2);
    default:
        return PyUnicode_FromString("record runs past the batch");
    }
}

/* v2_records(payload, count, base_offset, base_timestamp, append_time, base_sequence,
 *            record_cls, header_cls)
 *   -> None when the batch holds something only the Python decoder models (it then decodes
 *      the whole batch), else (records, position in the payload where decoding stopped,
 *      error) where error is None or (number of the record that failed, reason). */
static PyObject *py_v2_records(PyObject *self, PyObject *args)
{
    PyObject *obj, *append_obj, *record_cls, *header_cls;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    int base_sequence;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnLLOiOO", &obj, &count, &base_offset, &base_timestamp,
                          &append_obj, &base_sequence, &record_cls, &header_cls) ||
        check_type(record_cls) < 0 || check_type(header_cls) < 0)
        return NULL;
    batch_context ctx = {base_offset, base_timestamp, 0, append_obj != Py_None, base_sequence};
    if (ctx.has_append_time) {
        ctx.append_time = PyLong_AsLongLong(append_obj);
        if (ctx.append_time == -1 && PyErr_Occurred())
            return NULL;
    }
    if (get_view(obj, &view) < 0)
        return NULL;
    reader r = {view.buf, view.len, OK, 0, 0};
    PyObject *list = PyList_New(0), *result = NULL;
    Py_ssize_t pos = 0, i = 0;
    for (; list != NULL && i < count; i++) {
        PyObject *record = read_record(&r, &pos, &ctx, (PyTypeObject *)record_cls,
                                       (PyTypeObject *)header_cls);
        if (record == NULL)
            break;
        int rc = PyList_Append(list, record);
        Py_DECREF(record);
        if (rc < 0)
            Py_CLEAR(list);
    }
    release_view(&view);
    if (list == NULL || PyErr_Occurred()) {
        Py_XDECREF(list);
        return NULL;
    }
    if (r.error == UNMODELLED) {
        Py_DECREF(list);
        Py_RETURN_NONE;
    }
    if (r.error) {
        PyObject *reason = error_reason(&r);
        if (reason != NULL)
            result = Py_BuildValue("(Nn(nN))", list, pos, i, reason);
        else
            Py_DECREF(list);
        return result;
    }
    return Py_BuildValue("(NnO)", list, pos, Py_None);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_FASTCALL,
     "crc32c(buf, start=0, end=len(buf)) -> CRC-32C of buf[start:end]"},
    {"hardware_crc", py_hardware_crc, METH_NOARGS,
     "hardware_crc() -> whether CRC-32C runs on the processor's CRC instructions"},
    {"set_hardware_crc", py_set_hardware_crc, METH_O,
     "set_hardware_crc(on) -> the previous setting; off: the table-driven code (tests)"},
    {"walk_v2", py_walk_v2, METH_VARARGS,
     "walk_v2(buf, start, stop, end, max_size, limit, check_crc, until_invalid) -> "
     "(n, columns, next position)"},
    {"flag_batches", py_flag_batches, METH_VARARGS,
     "flag_batches(base_offsets, last_offsets, epochs, magics, valids, producer_ids, "
     "attributes, segment_base, has_prev, prev_last, epoch, producers) -> (flagged, gaps, "
     "first gap, has_prev, prev_last, epoch)"},
    {"offset_index_walk", py_offset_index_walk, METH_VARARGS,
     "offset_index_walk(index, used, base_offset, positions, last_offsets, valid_bytes, "
     "last_log) -> (flagged entries, multi-batch entries, first multi-batch entry)"},
    {"time_index_walk", py_time_index_walk, METH_VARARGS,
     "time_index_walk(index, used, base_offset, base_offsets, last_offsets, max_timestamps) "
     "-> flagged entries"},
    {"index_points", py_index_points, METH_VARARGS,
     "index_points(positions, last_offsets, max_timestamps, interval, last_entry, max_ts, "
     "offset_of_max_ts) -> (last_entry, max_ts, offset_of_max_ts, offsets, positions, "
     "timestamps, time_offsets)"},
    {"v2_records", py_v2_records, METH_VARARGS,
     "v2_records(payload, count, base_offset, base_timestamp, append_time, base_sequence, "
     "record_cls, header_cls) -> None or (records, error)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kdump._speedups", "kdump's optional C fast paths.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    crc_init();
#ifdef HW_CRC_BUILT
    __builtin_cpu_init();
    hw_crc_usable = __builtin_cpu_supports("sse4.2") != 0;
#endif
    have_hw_crc = hw_crc_usable;
    PyObject *m = PyModule_Create(&module);
    PyObject *names = PyTuple_New(WALK_COLUMNS);
    for (int c = 0; names != NULL && c < WALK_COLUMNS; c++) {
        PyObject *name = PyUnicode_FromString(walk_column_names[c]);
        if (name == NULL)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, c, name);
    }
    if (m != NULL && (names == NULL || PyModule_AddObject(m, "WALK_COLUMNS", names) < 0)) {
        Py_XDECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

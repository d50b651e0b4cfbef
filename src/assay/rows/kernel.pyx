# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# cython: cdivision=False, annotation_typing=False
"""The row kernel: a plain recorded row read, scored and written in one pass of C.

The fast tier of the row path (`assay.rows`); the ordinary metrics and writers are the
reference (`engine.scoring`, `store.encode_case`, `report.json_report.case_to_adk`,
`engine.aggregate.case_rows`). For a plain row (`id`, `prompt`, `response`,
`reference` and two trajectories of `{tool_name, tool_input}` calls) the row's calls
are compared once per call matcher into a small table that every trajectory metric
reads, ROUGE-1 is computed in C, the metrics' encoded results (`EncodedMetric`) are
built through each metric's own code the first time a value and explanation occur and
reused after, and the four outputs (the store's document, the report's case, its row,
its CSV line) are written straight into byte buffers.

A metric the kernel does not compute (`rows.plan.KernelKind.PYTHON`) is scored by its
own Python on the row's case (`RowPlan.python_results`) and written with the others:
one such metric never takes the run's other metrics off the kernel.

It exists only compiled (there is no pure Python copy): `assay._native` loads it while
its compiled copy matches this source. Without it, the reference path scores every
row; with it, a row the kernel does not read (`RowKernel.row` returns None: not the
plain shape, more than MAX_CALLS calls, a metric that could not score it) is the
reference path's. The two write the same bytes (tests/rows/test_kernel.py compares
them on hypothesis-generated rows). An exception raised in here is a bug: nothing
catches it.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_Size
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool
from libc.stdint cimport int32_t, uint64_t
from libc.stdio cimport snprintf
from libc.stdlib cimport calloc, free, qsort, realloc
from libc.string cimport memchr, memcmp, memcpy

import orjson

from assay.metrics.calldiff import format_value, same_value
from assay.metrics.call_equal import match_exact, match_name
from assay.metrics.lexical import NO_REFERENCE
from assay.metrics.porter import stem_uncached
from assay.metrics.tokenize import rouge1_fmeasure
from assay.core.jsonvalue import same_json
from assay.core.results import MetricResult, Score, Status
from assay.report.json_report import _metric_entry, _overall_entry, csv_fields, dumps
from assay.rows.plan import MAX_METRICS as _MAX_METRICS, KernelKind
from assay.store._document import FORMAT, metric_entry
from assay.store._json import dumps_bytes

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    bint PyUnicode_IS_ASCII(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    object PyUnicode_DecodeASCII(const char*, Py_ssize_t, const char*)
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1

# The metrics' kinds in the kernel (`rows.plan.KernelKind`).
cdef enum:
    K_PYTHON = 0
    K_EXACT = 1
    K_IN_ORDER = 2
    K_ANY_ORDER = 3
    K_PRECISION = 4
    K_RECALL = 5
    K_SINGLE = 6
    K_ROUGE = 7
    K_BY_COUNT = 8

# How a matcher compares two calls.
cdef enum:
    M_EXACT = 1  # call_equal.match_exact
    M_NAME = 2  # call_equal.match_name

# At most this many calls on a side (the comparison table is MAX_CALLS x MAX_CALLS):
# rows with more take the reference path.
DEF MAX_CALLS = 64
DEF MAX_METRICS = 64
DEF MAX_MATCHERS = 2  # match_exact, match_name

_PLAIN = frozenset(
    {"id", "prompt", "response", "reference", "predicted_trajectory", "reference_trajectory"}
)
_STATUS_VALUES = {s: s._value_.encode() for s in Status}
_ADK = {s: b"%d" % s.adk_code for s in Status}


cdef inline tuple _status_bytes(object status):
    """The status's value and ADK code as written, by identity: hashing an Enum member
    calls its Python-level __hash__."""
    if status is _FAILED:
        return _FAILED_BYTES
    if status is _PASSED:
        return _PASSED_BYTES
    if status is _NOT_EVALUATED:
        return _NOT_EVALUATED_BYTES
    return (_STATUS_VALUES[status], _ADK[status])
_PASSED = Status.PASSED
_FAILED = Status.FAILED
_NOT_EVALUATED = Status.NOT_EVALUATED
_PASSED_BYTES = (_STATUS_VALUES[_PASSED], _ADK[_PASSED])
_FAILED_BYTES = (_STATUS_VALUES[_FAILED], _ADK[_FAILED])
_NOT_EVALUATED_BYTES = (_STATUS_VALUES[_NOT_EVALUATED], _ADK[_NOT_EVALUATED])
_NO_RESPONSE = "the agent gave no final response"
_loads = orjson.loads
_dumps = orjson.dumps
# Each control character as orjson escapes it inside a string (\n, \u0001, ...).
_CONTROL_ESCAPES = [orjson.dumps(chr(c)).strip(b"\"") for c in range(0x20)]


# -- a growing byte buffer ----------------------------------------------------------------

cdef class _Buffer:
    cdef char* data
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity

    def __cinit__(self):
        self.data = NULL
        self.size = 0
        self.capacity = 0

    def __dealloc__(self):
        free(self.data)

    cdef int grow(self, Py_ssize_t more) except -1:
        cdef Py_ssize_t want = self.size + more
        cdef Py_ssize_t capacity = self.capacity or 4096
        cdef char* data
        while capacity < want:
            capacity *= 2
        data = <char*>realloc(self.data, capacity)
        if data == NULL:
            raise MemoryError()
        self.data = data
        self.capacity = capacity
        return 0

    cdef inline int put(self, const char* text, Py_ssize_t n) except -1:
        if self.size + n > self.capacity:
            self.grow(n)
        memcpy(self.data + self.size, text, n)
        self.size += n
        return 0

    cdef inline int put_bytes(self, bytes value) except -1:
        return self.put(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))

    cdef inline int put_str(self, str text) except -1:
        # Text known to need no escaping (the fixed parts of the documents).
        cdef Py_ssize_t n
        cdef const char* utf8 = PyUnicode_AsUTF8AndSize(text, &n)
        return self.put(utf8, n)

    cdef int put_escaped(self, str text) except -1:
        """The inside of `text`'s JSON string as orjson writes it: `"` and `\\` escaped,
        \\b \\t \\n \\f \\r by name, other control characters as \\u00xx, everything else
        as UTF-8 (a lone surrogate raises, as orjson refuses it)."""
        cdef Py_ssize_t n, i, start = 0
        cdef const char* utf8 = PyUnicode_AsUTF8AndSize(text, &n)
        cdef unsigned char c
        for i in range(n):
            c = <unsigned char>utf8[i]
            if c >= 0x20 and c != 0x22 and c != 0x5C:
                continue
            if i > start:
                self.put(utf8 + start, i - start)
            start = i + 1
            if c == 0x22:
                self.put_bytes(b'\\"')
            elif c == 0x5C:
                self.put_bytes(b"\\\\")
            else:  # a control character
                self.put_bytes(<bytes>PyList_GET_ITEM(_CONTROL_ESCAPES, c))
        if n > start:
            self.put(utf8 + start, n - start)
        return 0

    cdef inline int put_json(self, str text) except -1:
        """`text` as a JSON string (orjson's bytes)."""
        self.put_bytes(b'"')
        self.put_escaped(text)
        return self.put_bytes(b'"')

    cdef inline int put_json_or_null(self, object text) except -1:
        if text is None:
            return self.put_bytes(b"null")
        return self.put_json(<str>text)

    cdef inline bytes take(self):
        cdef bytes out = PyBytes_FromStringAndSize(self.data, self.size)
        self.size = 0
        return out


cdef bint _csv_plain(str text):
    """Whether a cell needs no quoting (none of `,"\\r\\n` or NUL)."""
    cdef Py_ssize_t n, i
    cdef const char* utf8 = PyUnicode_AsUTF8AndSize(text, &n)
    cdef char c
    for i in range(n):
        c = utf8[i]
        if c == b","[0] or c == b'"'[0] or c == b"\r"[0] or c == b"\n"[0] or c == 0:
            return False
    return True


# -- ROUGE-1 ------------------------------------------------------------------------------
# `tokenize.rouge1_fmeasure` on ASCII texts, without a string per word: each distinct
# word (its lowercased bytes) is looked up in a C hash table that gives its token's
# number; a word seen for the first time is stemmed by `porter.stem_uncached`, as
# `tokenize` stems it. Token numbers are then counted by sorting.

cdef struct _Slot:
    uint64_t hash
    Py_ssize_t offset  # of the word's bytes in the arena; -1: empty slot
    Py_ssize_t length
    int32_t token  # the token's number; -1: the word makes no token (an empty stem)

# Words remembered at most (as `tokenize._MAX_CACHED_WORDS`): then forgotten, which
# costs only stemming them again.
DEF MAX_WORDS = 262144


cdef int _compare_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef inline void _sort(int32_t* values, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i, j
    cdef int32_t value
    if n > 48:
        qsort(values, n, sizeof(int32_t), _compare_int32)
        return
    for i in range(1, n):
        value = values[i]
        j = i - 1
        while j >= 0 and values[j] > value:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = value


cdef class _Rouge:
    cdef _Slot* slots
    cdef Py_ssize_t capacity
    cdef Py_ssize_t used
    cdef char* arena
    cdef Py_ssize_t arena_size
    cdef Py_ssize_t arena_capacity
    cdef dict numbers  # token -> its number
    cdef int32_t* tokens
    cdef Py_ssize_t tokens_capacity
    cdef char* word
    cdef Py_ssize_t word_capacity

    def __cinit__(self):
        self.slots = NULL
        self.arena = NULL
        self.tokens = NULL
        self.word = NULL
        self.numbers = {}
        self._reset(1024)

    def __dealloc__(self):
        free(self.slots)
        free(self.arena)
        free(self.tokens)
        free(self.word)

    cdef int _reset(self, Py_ssize_t capacity) except -1:
        cdef Py_ssize_t i
        free(self.slots)
        self.slots = <_Slot*>calloc(capacity, sizeof(_Slot))
        if self.slots == NULL:
            raise MemoryError()
        for i in range(capacity):
            self.slots[i].offset = -1
        self.capacity = capacity
        self.used = 0
        self.arena_size = 0
        return 0

    cdef int _grow(self) except -1:
        cdef _Slot* old = self.slots
        cdef Py_ssize_t old_capacity = self.capacity, i, j
        cdef Py_ssize_t capacity = old_capacity * 2
        self.slots = <_Slot*>calloc(capacity, sizeof(_Slot))
        if self.slots == NULL:
            self.slots = old
            raise MemoryError()
        for i in range(capacity):
            self.slots[i].offset = -1
        for i in range(old_capacity):
            if old[i].offset >= 0:
                j = <Py_ssize_t>(old[i].hash & <uint64_t>(capacity - 1))
                while self.slots[j].offset >= 0:
                    j = (j + 1) & (capacity - 1)
                self.slots[j] = old[i]
        free(old)
        self.capacity = capacity
        return 0

    cdef int32_t _token(self, const char* word, Py_ssize_t n, uint64_t hash) except -2:
        cdef Py_ssize_t j = <Py_ssize_t>(hash & <uint64_t>(self.capacity - 1))
        cdef _Slot* slot
        cdef char* arena
        cdef Py_ssize_t want
        cdef int32_t number
        while True:
            slot = &self.slots[j]
            if slot.offset < 0:
                break
            if (
                slot.hash == hash and slot.length == n
                and memcmp(self.arena + slot.offset, word, n) == 0
            ):
                return slot.token
            j = (j + 1) & (self.capacity - 1)
        # A new word: its token as `tokenize` makes it.
        text = PyUnicode_DecodeASCII(word, n, NULL)
        token = stem_uncached(text) if n > 3 else text
        if not token:
            number = -1
        else:
            found = self.numbers.get(token)
            if found is None:
                found = self.numbers[token] = len(self.numbers)
            number = <int32_t>found
        if self.arena_size + n > self.arena_capacity:
            want = self.arena_capacity or 65536
            while want < self.arena_size + n:
                want *= 2
            arena = <char*>realloc(self.arena, want)
            if arena == NULL:
                raise MemoryError()
            self.arena = arena
            self.arena_capacity = want
        memcpy(self.arena + self.arena_size, word, n)
        slot.hash = hash
        slot.offset = self.arena_size
        slot.length = n
        slot.token = number
        self.arena_size += n
        self.used += 1
        if self.used * 2 >= self.capacity:
            self._grow()
        return number

    cdef Py_ssize_t _tokenize(self, str text, Py_ssize_t start) except -1:
        """Append the tokens of ASCII `text` at `tokens[start:]`; their count."""
        cdef Py_ssize_t n, i, length = 0, count = 0
        cdef const char* data = PyUnicode_AsUTF8AndSize(text, &n)
        cdef unsigned char c
        cdef uint64_t hash = 14695981039346656037ULL
        cdef int32_t number
        cdef char* grown
        cdef int32_t* more
        if self.word_capacity < n + 1:
            grown = <char*>realloc(self.word, n + 1)
            if grown == NULL:
                raise MemoryError()
            self.word = grown
            self.word_capacity = n + 1
        for i in range(n + 1):
            c = <unsigned char>data[i] if i < n else 0
            if 65 <= c <= 90:
                c += 32
            if (97 <= c <= 122) or (48 <= c <= 57):
                self.word[length] = <char>c
                length += 1
                hash = (hash ^ c) * 1099511628211ULL
                continue
            if length:
                number = self._token(self.word, length, hash)
                if number >= 0:
                    if start + count >= self.tokens_capacity:
                        more = <int32_t*>realloc(
                            self.tokens, (self.tokens_capacity * 2 + 256) * sizeof(int32_t)
                        )
                        if more == NULL:
                            raise MemoryError()
                        self.tokens = more
                        self.tokens_capacity = self.tokens_capacity * 2 + 256
                    self.tokens[start + count] = number
                    count += 1
                length = 0
                hash = 14695981039346656037ULL
        return count

    cdef object fmeasure(self, str candidate, str reference):
        """`rouge1_fmeasure(candidate, reference)`, the same float."""
        cdef Py_ssize_t nc, nr, i = 0, j = 0, a, b, overlap = 0
        cdef int32_t value
        cdef double precision, recall
        if not (PyUnicode_IS_ASCII(candidate) and PyUnicode_IS_ASCII(reference)):
            return rouge1_fmeasure(candidate, reference)
        if self.used >= MAX_WORDS:
            self._reset(1024)
            self.numbers.clear()
        nc = self._tokenize(candidate, 0)
        nr = self._tokenize(reference, nc)
        cdef int32_t* cand = self.tokens
        cdef int32_t* ref = self.tokens + nc
        if nc and nr:
            _sort(cand, nc)
            _sort(ref, nr)
            while i < nc and j < nr:
                if cand[i] < ref[j]:
                    i += 1
                elif cand[i] > ref[j]:
                    j += 1
                else:
                    value = cand[i]
                    a = i
                    while i < nc and cand[i] == value:
                        i += 1
                    b = j
                    while j < nr and ref[j] == value:
                        j += 1
                    overlap += min(i - a, j - b)
        precision = <double>overlap / <double>(nc if nc > 1 else 1)
        recall = <double>overlap / <double>(nr if nr > 1 else 1)
        if precision + recall > 0:
            return 2.0 * precision * recall / (precision + recall)
        return 0.0


# -- the kernel ---------------------------------------------------------------------------

cdef class EncodedMetric:
    """One metric's result on a plain row and its parts of the four outputs, each
    encoded by the reference path's own helpers (the store's `metric_entry`, the JSON
    report's `_overall_entry` and `_metric_entry`, the metric's `row_columns`, the CSV
    report's `csv_fields`).

    Results that do not depend on the row beyond their score (a perfect trajectory, a
    ROUGE value, an informational metric of a row without timings) repeat across rows:
    the kernel keeps them (`RowKernel.memo`), so a row's metrics are mostly encoded once
    per run, not once per row.
    """

    cdef public object result
    cdef public bytes stored
    cdef public bytes overall
    cdef public bytes invocation
    cdef public object columns
    cdef public object csv
    cdef public bytes columns_json
    cdef public Py_ssize_t columns_id
    cdef public object explanation_entry

    def __init__(self, metric, result):
        score = result.per_invocation[0]
        self.result = result
        self.stored = _kept(dumps_bytes(metric_entry(result.name, result)))
        self.overall = _kept(dumps(_overall_entry(result)))
        self.invocation = _kept(
            dumps(_metric_entry(result.name, score, result.threshold, result.status is None))
        )
        self.columns = metric.row_columns(score)
        self.csv = csv_fields(list(self.columns.values()))
        # The report row's part (`,"name/score":...`), and which columns it has: one
        # number per distinct list of column names (the row's shape is made of them).
        self.columns_json = b"".join(
            [b"," + dumps(key) + b":" + dumps(value) for key, value in self.columns.items()]
        )
        names = tuple(self.columns)
        self.columns_id = _COLUMN_LISTS.setdefault(names, len(_COLUMN_LISTS))
        # The report case's entry in its `explanations` object, if it has one.
        self.explanation_entry = (
            None
            if result.explanation is None
            else dumps(result.name) + b":" + dumps(result.explanation)
        )


cdef bytes _kept(bytes encoded):
    """A copy of orjson's output the size of its text: orjson's own keeps the larger
    buffer it wrote into, which thousands of kept entries would hold."""
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded))


_COLUMN_LISTS = {}
"""A number per distinct list of a metric's row columns (a few per run's metric)."""

_HEAD = ("eval_set_id", "case_id", "run", "invocation_id", "prompt", "response")
_SHAPES = {}
"""Each report row's columns by its key (whether it has no reference, then its
metrics' column lists' numbers), built once each."""


cdef tuple _row_shape(tuple key, list metrics):
    if len(_SHAPES) > 10_000:
        _SHAPES.clear()
    names = list(_HEAD) if key[0] else [*_HEAD, "reference"]
    for m in metrics:
        names.extend((<EncodedMetric>m).columns)
    shape = _SHAPES[key] = tuple(names)
    return shape


class _Call:
    """A tool call as a call matcher reads it: `name`, `args` (and `id`, None)."""

    __slots__ = ("args", "name")
    id = None

    def __init__(self, name, args):
        self.name = name
        self.args = args


cdef class KernelRow:
    """One plain row, scored and written (`RowKernel.row`)."""

    cdef public str case_id
    cdef public object status
    cdef public list metrics
    cdef public object stored
    cdef public object case_json
    cdef public object shape
    cdef public object line
    cdef public object csv


cdef class _Template:
    """A trajectory metric's encoded result for one value, its explanation left as
    `_PLACEHOLDER`: each new explanation is put in its place (`RowKernel._explained`)
    instead of encoding the whole result again through the metric's code."""

    cdef object encoded  # the EncodedMetric with the placeholder
    cdef list stored
    cdef list columns_json
    cdef list csv
    cdef bint result_explained  # the result's own explanation is the placeholder


# Stands for an explanation in a `_Template`: JSON and CSV write it as it is, and no
# explanation holds it (one that does is encoded the ordinary way).
_PLACEHOLDER = "\u2063assay explanation\u2063"
_PLACEHOLDER_BYTES = _PLACEHOLDER.encode()


cdef class RowKernel:
    """The kernel of one run's plan (`rows.plan.RowPlan`; see the module docstring)."""

    cdef object plan
    cdef dict memo  # (metric, value, explanation) -> EncodedMetric
    cdef dict by_count  # number of calls -> {metric: EncodedMetric}
    cdef bint any_python
    cdef public Py_ssize_t python_rows  # rows whose PYTHON metrics were scored here
    cdef list metric_objects
    cdef int n_metrics
    cdef int kinds[MAX_METRICS]
    cdef int matcher_of[MAX_METRICS]
    cdef bint perfect_when_exact[MAX_METRICS]
    cdef int n_matchers
    cdef int matcher_mode[MAX_MATCHERS]
    cdef list matcher_functions
    cdef list single_wanted
    cdef bint single_check_args[MAX_METRICS]
    cdef bint any_by_count
    cdef dict templates
    cdef _Rouge rouge
    cdef _Buffer doc
    cdef _Buffer case
    cdef _Buffer row_line
    cdef _Buffer csv_line
    cdef _Buffer diff
    # The row's texts (escaped for JSON) and calls (as JSON), written once for every
    # output: offsets into `pieces`.
    cdef _Buffer pieces
    cdef Py_ssize_t text_at[3]
    cdef Py_ssize_t text_size[3]
    cdef Py_ssize_t call_at[2][MAX_CALLS]
    cdef Py_ssize_t call_size[2][MAX_CALLS]
    # The comparison table of the row being scored, per matcher: table[m][e][a].
    cdef unsigned char table[MAX_MATCHERS][MAX_CALLS][MAX_CALLS]
    cdef bint table_done[MAX_MATCHERS]
    cdef Py_ssize_t count_done[MAX_MATCHERS]
    cdef list explained  # per matcher: the row's call diff, once asked for
    cdef bint explained_done[MAX_MATCHERS]

    def __cinit__(self):
        self.doc = _Buffer()
        self.case = _Buffer()
        self.row_line = _Buffer()
        self.csv_line = _Buffer()
        self.diff = _Buffer()
        self.pieces = _Buffer()
        self.rouge = _Rouge()
        self.templates = {}
        self.memo = {}
        self.by_count = {}
        self.python_rows = 0

    @staticmethod
    def of(plan):
        """The kernel of `plan` (a `rows.plan.RowPlan`): each metric of kind PYTHON is
        scored by its own code on the kernel's rows, every other in here."""
        kernel = RowKernel()
        kernel._setup(plan)
        return kernel

    cdef int _setup(self, object plan) except -1:
        cdef int i, m, kind
        self.plan = plan
        self.metric_objects = list(plan.metrics)
        if len(self.metric_objects) > MAX_METRICS or MAX_METRICS != _MAX_METRICS:
            raise ValueError(f"a plan of at most {MAX_METRICS} metrics")
        self.n_metrics = len(self.metric_objects)
        self.matcher_functions = []
        self.single_wanted = [None] * self.n_metrics
        self.any_by_count = False
        self.any_python = False
        for i in range(self.n_metrics):
            metric = self.metric_objects[i]
            kind = int(plan.kinds[i])
            self.kinds[i] = kind
            self.matcher_of[i] = -1
            self.perfect_when_exact[i] = False
            self.single_check_args[i] = False
            if kind == K_PYTHON:
                self.any_python = True
                continue
            if kind == K_BY_COUNT:
                self.any_by_count = True
                continue
            if kind == K_ROUGE:
                continue
            # The plan gives the kernel only the matchers it implements.
            matches = metric.matcher.matches
            if matches is not match_exact and matches is not match_name:
                raise ValueError(f"{metric.name}: a matcher the kernel does not implement")
            for m in range(len(self.matcher_functions)):
                if self.matcher_functions[m] is matches:
                    break
            else:
                m = len(self.matcher_functions)
                self.matcher_functions.append(matches)
                self.matcher_mode[m] = M_EXACT if matches is match_exact else M_NAME
            self.matcher_of[i] = m
            self.perfect_when_exact[i] = bool(metric.perfect_when_exact)
            if kind == K_SINGLE:
                self.single_wanted[i] = metric.wanted
                self.single_check_args[i] = bool(metric.check_args)
        self.n_matchers = len(self.matcher_functions)
        self.explained = [None] * self.n_matchers
        return 0

    cpdef object row(self, bytes raw, Py_ssize_t index, str set_id, object run_id,
                     object set_file, bint store, bint cases, bint rows, bint csv):
        """The row at `index` of its file (`raw`, one JSON line) scored and written, or
        None when it is not a plain row the kernel reads, or a metric scored by its own
        Python could not score it (the reference path then takes it, and reports what
        is wrong with it)."""
        cdef object row
        try:
            row = _loads(raw)
        except orjson.JSONDecodeError:
            return None
        if type(row) is not dict or not row.keys() <= _PLAIN:
            return None
        cdef dict cells = <dict>row
        cdef object raw_id = cells.get("id")
        cdef str case_id
        if type(raw_id) is str:
            case_id = <str>raw_id
        elif raw_id is None:
            case_id = f"row-{index}"
        elif type(raw_id) is int:
            case_id = str(raw_id)
        else:
            return None
        cdef object prompt = cells.get("prompt")
        cdef object response = cells.get("response")
        cdef object reference = cells.get("reference")
        if (prompt is not None and type(prompt) is not str) or (
            response is not None and type(response) is not str
        ) or (reference is not None and type(reference) is not str):
            return None
        cdef object pred_raw = cells.get("predicted_trajectory")
        cdef object ref_raw = cells.get("reference_trajectory")
        if (response is None and pred_raw is None) or (reference is None and ref_raw is None):
            return None
        cdef list predicted = _calls(pred_raw)
        cdef list expected = _calls(ref_raw)
        if predicted is None or expected is None:
            return None
        # predicted / expected: flat lists [name, args, name, args, ...]
        cdef Py_ssize_t n_actual = PyList_GET_SIZE(predicted) // 2
        cdef Py_ssize_t n_expected = PyList_GET_SIZE(expected) // 2
        if n_actual > MAX_CALLS or n_expected > MAX_CALLS:
            return None
        cdef list python = None
        if self.any_python:
            python = self.plan.python_results(cells, index)
            if python is None:
                return None
            self.python_rows += 1
        return self._score_and_write(
            case_id, prompt, response, reference, predicted, expected, n_actual,
            n_expected, set_id, run_id, set_file, store, cases, rows, csv, python,
        )

    def scan(self, bytes data, Py_ssize_t position, Py_ssize_t lineno, Py_ssize_t offset,
             Py_ssize_t start, str set_id, object run_id, object set_file, bint store,
             bint cases, bint rows, bint csv, Py_ssize_t keep, object out, dict statuses,
             dict counted):
        """Score the rows of a chunk of JSON lines (`data`, from byte `position`, line
        `lineno`, the chunk's row `offset`) until its end or a row the kernel leaves to
        the reference path, adding each to the batch's output `out` as `stream_batch` does
        (`statuses` and `counted`: its counts of statuses and encoded results).

        Returns (position, lineno, offset) after the rows scored, and the row left:
        its line number, its row offset in the chunk and its text, or -1, -1, None at
        the end. Lines are split and skipped (blank) as `LineChunk.batch` does them."""
        cdef Py_ssize_t counts[3]
        counts[0] = counts[1] = counts[2] = 0
        try:
            return self._scan(data, position, lineno, offset, start, set_id, run_id,
                              set_file, store, cases, rows, csv, keep, out, statuses,
                              counted, counts)
        finally:
            # Counted here: hashing an Enum member calls its Python-level __hash__.
            statuses[_PASSED] += counts[0]
            statuses[_FAILED] += counts[1]
            statuses[_NOT_EVALUATED] += counts[2]

    cdef object _scan(self, bytes data, Py_ssize_t position, Py_ssize_t lineno,
                      Py_ssize_t offset, Py_ssize_t start, str set_id, object run_id,
                      object set_file, bint store, bint cases, bint rows, bint csv,
                      Py_ssize_t keep, object out, dict statuses, dict counted,
                      Py_ssize_t* counts):
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data), end, this_line, this_offset
        cdef const char* text = PyBytes_AS_STRING(data)
        cdef const char* newline
        cdef list case_ids = out.case_ids
        cdef list encoded = out.encoded
        cdef list cases_json = out.cases_json
        cdef list row_lines = out.rows
        cdef list kept = out.kept
        cdef KernelRow done
        cdef object line, status
        while position < n:
            newline = <const char*>memchr(text + position, 10, n - position)
            end = (newline - text) + 1 if newline != NULL else n
            this_line = lineno
            lineno += 1
            if _blank(text + position, end - position):
                position = end
                continue
            line = PyBytes_FromStringAndSize(text + position, end - position)
            position = end
            this_offset = offset
            offset += 1
            if _long_digits(PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)):
                return position, lineno, offset, this_line, this_offset, line
            found = self.row(line, start + this_offset, set_id, run_id, set_file, store, cases,
                             rows, csv)
            if found is None:
                return position, lineno, offset, this_line, this_offset, line
            done = <KernelRow>found
            status = done.status
            if status is not _PASSED and PyList_GET_SIZE(kept) < keep:
                kept.append((start + this_offset, this_line, line))
            case_ids.append(done.case_id)
            if status is _PASSED:
                counts[0] += 1
            elif status is _FAILED:
                counts[1] += 1
            elif status is _NOT_EVALUATED:
                counts[2] += 1
            else:
                statuses[status] += 1
            for metric in done.metrics:
                number = counted.get(metric)
                counted[metric] = 1 if number is None else number + 1
            if store:
                encoded.append(done.stored)
            if cases:
                cases_json.append(done.case_json)
            if rows:
                row_lines.append((done.shape, done.line, done.csv))
        return position, lineno, offset, -1, -1, None

    cdef object _score_and_write(
        self, str case_id, object prompt, object response, object reference,
        list predicted, list expected, Py_ssize_t n_actual, Py_ssize_t n_expected,
        str set_id, object run_id, object set_file, bint store, bint cases, bint rows,
        bint csv, list python,
    ):
        cdef int i, m, kind
        cdef object value
        cdef object explanation
        cdef list encoded = []
        cdef bint failed = False, not_evaluated = False, scored = False
        cdef dict memo = self.memo
        cdef dict by_count = None
        cdef double number
        cdef Py_ssize_t next_python = 0
        if len(memo) > _MEMO_SIZE:
            memo.clear()  # bounded: results of a run repeat, but floats and texts need not
        if len(self.templates) > _MEMO_SIZE:
            self.templates.clear()
        for m in range(self.n_matchers):
            self.table_done[m] = False
            self.count_done[m] = -1
            self.explained_done[m] = False
        if self.any_by_count:
            by_count = self._by_call_count(n_actual)
        for i in range(self.n_metrics):
            kind = self.kinds[i]
            explanation = None
            if kind == K_BY_COUNT:
                one = by_count[i]
            elif kind == K_PYTHON:
                # Its own code's result on this row (`RowPlan.python_results`).
                one = EncodedMetric(self.metric_objects[i], python[next_python])
                next_python += 1
            else:
                if kind == K_ROUGE:
                    if reference is None:
                        value, explanation = None, NO_REFERENCE
                    elif response is None:
                        value, explanation = 0.0, _NO_RESPONSE
                    else:
                        value = self.rouge.fmeasure(<str>response, <str>reference)
                else:
                    m = self.matcher_of[i]
                    if not self.table_done[m]:
                        self._compare(m, predicted, expected, n_actual, n_expected)
                    if kind == K_SINGLE:
                        value = self._single(i, m, predicted, n_actual)
                    elif self.perfect_when_exact[i] and self._exact(m, n_actual, n_expected):
                        value = 1.0
                    else:
                        number = self._trajectory(kind, m, n_actual, n_expected)
                        value = number
                        if number < 1.0:
                            if not self.explained_done[m]:
                                self.explained[m] = self._diff(
                                    m, predicted, expected, n_actual, n_expected
                                )
                                self.explained_done[m] = True
                            explanation = self.explained[m]
                key = (i, value, explanation)
                one = memo.get(key)
                if one is None:
                    if explanation is not None and kind != K_ROUGE:
                        one = memo[key] = self._explained(i, value, <str>explanation)
                    else:
                        one = self._encoded(i, value, explanation)
            encoded.append(one)
            status = (<EncodedMetric>one).result.status
            if status is None:
                continue  # informational
            if status == _FAILED:
                failed = True
            elif status == _NOT_EVALUATED:
                not_evaluated = True
            else:
                scored = True
        # case_status(statuses, None): any failed fails, else any not evaluated, else
        # passed when something was scored.
        if failed:
            case_status = _FAILED
        elif not_evaluated or not scored:
            case_status = _NOT_EVALUATED
        else:
            case_status = _PASSED
        out = KernelRow()
        out.case_id = case_id
        out.status = case_status
        out.metrics = encoded
        if store or cases or rows:
            self._pieces(prompt, response, reference, predicted, expected, n_actual,
                         n_expected, store or cases)
        if store:
            self._store_document(case_id, case_status, encoded, prompt, response, reference,
                                 n_actual, n_expected, set_id)
            out.stored = (set_id, case_id, 0, case_status._value_, "COMPLETED", None, None,
                          self.doc.take())
        if cases:
            self._report_case(case_id, case_status, encoded, prompt, response, reference,
                              n_actual, n_expected, set_id, run_id, set_file)
            out.case_json = self.case.take()
        if rows:
            out.shape = self._report_row(case_id, encoded, prompt, response, reference, set_id)
            out.line = self.row_line.take()
        if csv:
            self._csv(case_id, encoded, prompt, response, reference, set_id)
            out.csv = self.csv_line.take()
        self.pieces.size = 0
        return out

    # -- encoded results ----------------------------------------------------------------

    cdef object _encoded(self, int i, object value, object explanation):
        """Metric `i`'s encoded result of one invocation scored `value` with
        `explanation`, through the metric's own code, kept for the rows after."""
        key = (i, value, explanation)
        found = self.memo.get(key)
        if found is None:
            metric = self.metric_objects[i]
            found = self.memo[key] = EncodedMetric(
                metric, metric.result_from_invocations([Score(value, explanation)])
            )
        return found

    cdef dict _by_call_count(self, Py_ssize_t calls):
        """The by-call-count metrics' results on a row of `calls` calls, by metric
        index (each scored by the metric itself once per call count)."""
        found = self.by_count.get(calls)
        if found is None:
            if len(self.by_count) > _MEMO_SIZE:
                self.by_count.clear()
            found = self.by_count[calls] = {
                i: EncodedMetric(self.metric_objects[i],
                                 self.plan.probe(self.metric_objects[i], calls))
                for i in range(self.n_metrics) if self.kinds[i] == K_BY_COUNT
            }  # fmt: skip
        return <dict>found

    cdef object _explained(self, int i, object value, str explanation):
        """Metric `i`'s encoded result for `value` with `explanation`: its template's
        with the explanation put in (see `_Template`), or encoded through the metric's
        code when it has no template."""
        cdef _Template template
        cdef Py_ssize_t n, k
        cdef const char* text
        if _PLACEHOLDER in explanation:
            return self._encoded(i, value, explanation)
        text = PyUnicode_AsUTF8AndSize(explanation, &n)
        for k in range(n):
            if text[k] == 0:
                return self._encoded(i, value, explanation)  # NUL: csv's own rules
        key = (i, value)
        found = self.templates.get(key, _MISSING)
        if found is _MISSING:
            found = self.templates[key] = self._template(i, value)
        if found is None:
            return self._encoded(i, value, explanation)
        template = <_Template>found
        base = template.encoded
        self.pieces.size = 0
        self.pieces.put_escaped(explanation)
        escaped = self.pieces.take()
        cdef EncodedMetric one = EncodedMetric.__new__(EncodedMetric)
        old = base.result
        one.result = MetricResult(
            old.name, old.score, old.threshold, old.status,
            explanation if template.result_explained else old.explanation,
            [Score(value, explanation)], {}, old.error_type,
        )
        one.stored = escaped.join(template.stored)
        one.overall = base.overall
        one.invocation = base.invocation
        columns = dict(base.columns)
        for name, column in columns.items():
            if column == _PLACEHOLDER:
                columns[name] = explanation
        one.columns = columns
        one.csv = _csv_cell(explanation).join(template.csv)
        one.columns_json = escaped.join(template.columns_json)
        one.columns_id = base.columns_id
        one.explanation_entry = (
            None if base.explanation_entry is None
            else escaped.join(base.explanation_entry.split(_PLACEHOLDER_BYTES))
        )
        return one

    cdef object _template(self, int i, object value):
        """Metric `i`'s `_Template` for `value`, or None when its encoded result does
        not hold the explanation only where the template puts it."""
        metric = self.metric_objects[i]
        score = Score(value, _PLACEHOLDER)
        base = EncodedMetric(metric, metric.result_from_invocations([score]))
        result = base.result
        if (
            result.explanation not in (None, _PLACEHOLDER)
            or len(result.per_invocation) != 1
            or result.per_invocation[0] is not score
            or score.explanation != _PLACEHOLDER
            or score.details
            or result.details
            or _PLACEHOLDER_BYTES in base.overall
            or _PLACEHOLDER_BYTES in base.invocation
        ):
            return None
        template = _Template()
        template.encoded = base
        template.stored = base.stored.split(_PLACEHOLDER_BYTES)
        template.columns_json = base.columns_json.split(_PLACEHOLDER_BYTES)
        template.csv = base.csv.split(_PLACEHOLDER)
        template.result_explained = result.explanation == _PLACEHOLDER
        return template

    # -- comparing calls ----------------------------------------------------------------

    cdef int _compare(self, int m, list predicted, list expected, Py_ssize_t n_actual,
                      Py_ssize_t n_expected) except -1:
        cdef Py_ssize_t e, a
        cdef int mode = self.matcher_mode[m]
        for e in range(n_expected):
            for a in range(n_actual):
                self.table[m][e][a] = _same_call(
                    mode,
                    <object>PyList_GET_ITEM(expected, 2 * e),
                    <object>PyList_GET_ITEM(expected, 2 * e + 1),
                    <object>PyList_GET_ITEM(predicted, 2 * a),
                    <object>PyList_GET_ITEM(predicted, 2 * a + 1),
                )
        self.table_done[m] = True
        return 0

    cdef bint _exact(self, int m, Py_ssize_t n_actual, Py_ssize_t n_expected):
        cdef Py_ssize_t i
        if n_actual != n_expected:
            return False
        for i in range(n_expected):
            if not self.table[m][i][i]:
                return False
        return True

    cdef bint _in_order(self, int m, Py_ssize_t n_actual, Py_ssize_t n_expected):
        cdef Py_ssize_t a, i = 0
        if n_expected == 0:
            return True
        if n_actual < n_expected:
            return False
        for a in range(n_actual):
            if self.table[m][i][a]:
                i += 1
                if i == n_expected:
                    return True
        return False

    cdef Py_ssize_t _count(self, int m, Py_ssize_t n_actual, Py_ssize_t n_expected):
        # First fit, each actual call standing for at most one expected call: maximum
        # for an equivalence (the only matchers the kernel counts with).
        cdef Py_ssize_t e, a, count = 0
        cdef unsigned char used[MAX_CALLS]
        if self.count_done[m] >= 0:
            return self.count_done[m]
        if n_actual and n_expected:
            for a in range(n_actual):
                used[a] = 0
            for e in range(n_expected):
                for a in range(n_actual):
                    if not used[a] and self.table[m][e][a]:
                        used[a] = 1
                        count += 1
                        break
        self.count_done[m] = count
        return count

    cdef double _trajectory(self, int kind, int m, Py_ssize_t n_actual, Py_ssize_t n_expected):
        if kind == K_EXACT:
            return 1.0 if self._exact(m, n_actual, n_expected) else 0.0
        if kind == K_IN_ORDER:
            return 1.0 if self._in_order(m, n_actual, n_expected) else 0.0
        if kind == K_ANY_ORDER:
            if n_expected == 0:
                return 1.0
            if n_actual >= n_expected and self._count(m, n_actual, n_expected) == n_expected:
                return 1.0
            return 0.0
        if kind == K_PRECISION:
            if n_actual == 0:
                return 0.0 if n_expected else 1.0
            return <double>self._count(m, n_actual, n_expected) / <double>n_actual
        # K_RECALL
        if n_expected == 0:
            return 1.0
        return <double>self._count(m, n_actual, n_expected) / <double>n_expected

    cdef object _single(self, int i, int m, list predicted, Py_ssize_t n_actual):
        cdef Py_ssize_t a
        wanted = self.single_wanted[i]
        name = wanted.name
        for a in range(n_actual):
            call_name = <object>PyList_GET_ITEM(predicted, 2 * a)
            if call_name == name and (
                not self.single_check_args[i]
                or self.matcher_functions[m](
                    wanted, _Call(call_name, <object>PyList_GET_ITEM(predicted, 2 * a + 1))
                )
            ):
                return 1.0
        return 0.0

    # -- explaining ---------------------------------------------------------------------

    cdef object _diff(self, int m, list predicted, list expected, Py_ssize_t n_actual,
                      Py_ssize_t n_expected):
        """`calldiff.explain_calls(expected, predicted, matches)` of the row, from the
        comparison table of matcher `m`: the same text."""
        cdef _Buffer out = self.diff
        cdef Py_ssize_t e, a, k, n_left_expected = 0, n_left_actual = 0, paired, previous
        cdef Py_ssize_t pair_of[MAX_CALLS]  # expected -> actual, -1: unpaired
        cdef bint same_tool[MAX_CALLS]
        cdef unsigned char used[MAX_CALLS]
        cdef Py_ssize_t left_expected[MAX_CALLS]
        cdef Py_ssize_t left_actual[MAX_CALLS]
        cdef bint out_of_order = False
        cdef Py_ssize_t parts = 0
        out.size = 0
        for a in range(n_actual):
            used[a] = 0
        # Matching calls pair first, each actual call once; then calls of the same tool.
        for e in range(n_expected):
            pair_of[e] = -1
            same_tool[e] = False
            for a in range(n_actual):
                if not used[a] and self.table[m][e][a]:
                    pair_of[e] = a
                    used[a] = 1
                    break
        for e in range(n_expected):
            if pair_of[e] >= 0:
                continue
            name = <object>PyList_GET_ITEM(expected, 2 * e)
            for a in range(n_actual):
                if not used[a] and PyObject_RichCompareBool(
                    <object>PyList_GET_ITEM(predicted, 2 * a), name, Py_EQ
                ):
                    pair_of[e] = a
                    same_tool[e] = True
                    used[a] = 1
                    break
        # Wrong arguments of the same-tool pairs, in the expected order.
        for e in range(n_expected):
            if same_tool[e]:
                parts = self._argument_differences(
                    out, parts, <str>PyList_GET_ITEM(expected, 2 * e),
                    <dict>PyList_GET_ITEM(expected, 2 * e + 1),
                    <dict>PyList_GET_ITEM(predicted, 2 * pair_of[e] + 1),
                )
        for e in range(n_expected):
            if pair_of[e] < 0:
                left_expected[n_left_expected] = e
                n_left_expected += 1
        for a in range(n_actual):
            if not used[a]:
                left_actual[n_left_actual] = a
                n_left_actual += 1
        paired = min(n_left_expected, n_left_actual)
        for k in range(paired):
            parts = _separate(out, parts)
            out.put_bytes(b"wrong tool: expected ")
            _format_call(out, expected, left_expected[k])
            out.put_bytes(b", got ")
            _format_call(out, predicted, left_actual[k])
        for k in range(paired, n_left_expected):
            parts = _separate(out, parts)
            out.put_bytes(b"missing call ")
            _format_call(out, expected, left_expected[k])
        for k in range(paired, n_left_actual):
            parts = _separate(out, parts)
            out.put_bytes(b"extra call ")
            _format_call(out, predicted, left_actual[k])
        # The pairs in another relative order: one wrong-order difference.
        previous = -1
        for e in range(n_expected):
            if pair_of[e] >= 0:
                if pair_of[e] < previous:
                    out_of_order = True
                    break
                previous = pair_of[e]
        if out_of_order:
            parts = _separate(out, parts)
            out.put_bytes(b"wrong order: expected ")
            k = 0
            for e in range(n_expected):
                if pair_of[e] >= 0:
                    if k:
                        out.put_bytes(b", ")
                    k += 1
                    out.put_str(<str>PyList_GET_ITEM(expected, 2 * e))
            out.put_bytes(b"; got ")
            k = 0
            for a in range(n_actual):
                if used[a]:
                    if k:
                        out.put_bytes(b", ")
                    k += 1
                    out.put_str(<str>PyList_GET_ITEM(predicted, 2 * a))
        if parts == 0:
            return None
        text = PyUnicode_DecodeUTF8(out.data, out.size, NULL)
        out.size = 0
        return text

    cdef Py_ssize_t _argument_differences(self, _Buffer out, Py_ssize_t parts, str name,
                                          dict want, dict got) except -1:
        # Keys of the expected call, then the actual call's others, in their order.
        for key, value in want.items():
            other = got.get(key, _MISSING)
            if other is not _MISSING and _same_value(value, other):
                continue
            parts = _separate(out, parts)
            _wrong_argument(out, name, key, value, other)
        for key, other in got.items():
            if key in want:
                continue
            parts = _separate(out, parts)
            _wrong_argument(out, name, key, _MISSING, other)
        return parts

    # -- writing ------------------------------------------------------------------------

    cdef int _pieces(self, object prompt, object response, object reference, list predicted,
                     list expected, Py_ssize_t n_actual, Py_ssize_t n_expected,
                     bint with_calls) except -1:
        """The row's texts escaped and its calls encoded, once for every output."""
        cdef _Buffer out = self.pieces
        cdef Py_ssize_t i, side
        cdef list calls
        texts = (prompt, response, reference)
        out.size = 0
        for i in range(3):
            text = texts[i]
            if text is None:
                self.text_size[i] = -1
                continue
            self.text_at[i] = out.size
            out.put_escaped(<str>text)
            self.text_size[i] = out.size - self.text_at[i]
        if not with_calls:
            return 0
        for side in range(2):
            calls = predicted if side == 0 else expected
            for i in range(n_actual if side == 0 else n_expected):
                # `{"name":...,"args":...}`, as orjson writes the dict
                self.call_at[side][i] = out.size
                out.put_bytes(b'{"name":"')
                out.put_escaped(<str>PyList_GET_ITEM(calls, 2 * i))
                out.put_bytes(b'","args":')
                args = <object>PyList_GET_ITEM(calls, 2 * i + 1)
                if PyDict_Size(args) == 0:
                    out.put_bytes(b"{}")
                elif not _put_flat_object(out, <dict>args):
                    out.put_bytes(_dumps(args))
                out.put_bytes(b"}")
                self.call_size[side][i] = out.size - self.call_at[side][i]
        return 0

    cdef inline int _text(self, _Buffer out, int which) except -1:
        """Text `which` (0 prompt, 1 response, 2 reference) as a JSON string, or null."""
        if self.text_size[which] < 0:
            return out.put_bytes(b"null")
        out.put_bytes(b'"')
        out.put(self.pieces.data + self.text_at[which], self.text_size[which])
        return out.put_bytes(b'"')

    cdef inline int _call(self, _Buffer out, int side, Py_ssize_t i) except -1:
        return out.put(self.pieces.data + self.call_at[side][i], self.call_size[side][i])

    cdef int _stored_turn(self, int side, Py_ssize_t n, int final) except -1:
        cdef _Buffer out = self.doc
        cdef Py_ssize_t i
        out.put_bytes(b'{"user_input":{')
        if self.text_size[0] >= 0:
            out.put_bytes(b'"text":')
            self._text(out, 0)
            out.put_bytes(b",")
        out.put_bytes(b'"blobs":[],"tool_responses":[]},"steps":[')
        for i in range(n):
            if i:
                out.put_bytes(b",")
            out.put_bytes(b'{"tool_call":')
            self._call(out, side, i)
            out.put_bytes(b"}")
        out.put_bytes(b"]")
        if self.text_size[final] >= 0:
            out.put_bytes(b',"final_response":')
            self._text(out, final)
        return out.put_bytes(b',"expectations":[],"rubrics":[]}')

    cdef int _store_document(self, str case_id, object status, list encoded, object prompt,
                             object response, object reference, Py_ssize_t n_actual,
                             Py_ssize_t n_expected, str set_id) except -1:
        cdef _Buffer out = self.doc
        cdef Py_ssize_t i
        out.put_bytes(_FORMAT_HEAD)
        out.put_json(case_id)
        out.put_bytes(b',"status":"')
        out.put_bytes(<bytes>_status_bytes(status)[0])
        out.put_bytes(b'"')
        if encoded:
            out.put_bytes(b',"metrics":[')
            for i in range(len(encoded)):
                if i:
                    out.put_bytes(b",")
                out.put_bytes((<EncodedMetric>PyList_GET_ITEM(encoded, i)).stored)
            out.put_bytes(b"]")
        out.put_bytes(b',"invocations":[{"actual":')
        self._stored_turn(0, n_actual, 1)
        out.put_bytes(b',"expected":')
        self._stored_turn(1, n_expected, 2)
        out.put_bytes(b'}],"eval_set_id":')
        out.put_json(set_id)
        return out.put_bytes(b"}")

    cdef int _invocation(self, str case_id, int side, Py_ssize_t n, int final) except -1:
        cdef _Buffer out = self.case
        cdef Py_ssize_t i
        out.put_bytes(b'{"invocation_id":"')
        out.put_escaped(case_id)
        out.put_bytes(b'-1","user_content":{"role":"user","parts":[{"text":')
        if self.text_size[0] < 0:
            out.put_bytes(b'""')
        else:
            self._text(out, 0)
        out.put_bytes(b'}]},"final_response":')
        if self.text_size[final] < 0:
            out.put_bytes(b"null")
        else:
            out.put_bytes(b'{"role":"model","parts":[{"text":')
            self._text(out, final)
            out.put_bytes(b"}]}")
        out.put_bytes(b',"intermediate_data":{"tool_uses":[')
        for i in range(n):
            if i:
                out.put_bytes(b",")
            self._call(out, side, i)
        return out.put_bytes(
            b'],"tool_responses":[],"intermediate_responses":[]},"creation_timestamp":0.0}'
        )

    cdef int _report_case(self, str case_id, object status, list encoded, object prompt,
                          object response, object reference, Py_ssize_t n_actual,
                          Py_ssize_t n_expected, str set_id, object run_id,
                          object set_file) except -1:
        cdef _Buffer out = self.case
        cdef Py_ssize_t i, n = len(encoded)
        cdef bint first
        out.put_bytes(b'{"eval_set_id":')
        out.put_json(set_id)
        out.put_bytes(b',"eval_id":')
        out.put_json(case_id)
        out.put_bytes(b',"run_index":0,"final_eval_status":')
        out.put_bytes(<bytes>_status_bytes(status)[1])
        out.put_bytes(b',"status":"')
        out.put_bytes(<bytes>_status_bytes(status)[0])
        out.put_bytes(b'","overall_eval_metric_results":[')
        for i in range(n):
            if i:
                out.put_bytes(b",")
            out.put_bytes((<EncodedMetric>PyList_GET_ITEM(encoded, i)).overall)
        out.put_bytes(b'],"eval_metric_result_per_invocation":[{"actual_invocation":')
        self._invocation(case_id, 0, n_actual, 1)
        out.put_bytes(b',"expected_invocation":')
        self._invocation(case_id, 1, n_expected, 2)
        out.put_bytes(b',"eval_metric_results":[')
        for i in range(n):
            if i:
                out.put_bytes(b",")
            out.put_bytes((<EncodedMetric>PyList_GET_ITEM(encoded, i)).invocation)
        out.put_bytes(b']}],"session_id":"')
        out.put_escaped(run_id or "assay")
        out.put_bytes(b":")
        out.put_escaped(set_id)
        out.put_bytes(b":")
        out.put_escaped(case_id)
        out.put_bytes(
            b':0","latency_s":null,"failure":false,"error":null,"error_type":null,'
            b'"explanations":{'
        )
        first = True
        for i in range(n):
            entry = (<EncodedMetric>PyList_GET_ITEM(encoded, i)).explanation_entry
            if entry is not None:
                if not first:
                    out.put_bytes(b",")
                first = False
                out.put_bytes(<bytes>entry)
        if set_file is None:
            return out.put_bytes(b"}}")
        out.put_bytes(b'},"eval_set_file":')
        out.put_json(<str>set_file)
        return out.put_bytes(b"}")

    cdef object _report_row(self, str case_id, list encoded, object prompt, object response,
                            object reference, str set_id):
        cdef _Buffer out = self.row_line
        cdef Py_ssize_t i, n = len(encoded)
        key = (reference is None, *[(<EncodedMetric>m).columns_id for m in encoded])
        shape = _SHAPES.get(key)
        if shape is None:
            shape = _row_shape(key, encoded)
        out.put_bytes(b'{"eval_set_id":')
        out.put_json(set_id)
        out.put_bytes(b',"case_id":')
        out.put_json(case_id)
        out.put_bytes(b',"run":0,"invocation_id":null,"prompt":')
        self._text(out, 0)
        out.put_bytes(b',"response":')
        self._text(out, 1)
        if reference is not None:
            out.put_bytes(b',"reference":')
            self._text(out, 2)
        for i in range(n):
            out.put_bytes((<EncodedMetric>PyList_GET_ITEM(encoded, i)).columns_json)
        out.put_bytes(b"}\n")
        return shape

    cdef int _csv(self, str case_id, list encoded, object prompt, object response,
                  object reference, str set_id) except -1:
        cdef _Buffer out = self.csv_line
        cdef Py_ssize_t i, n = len(encoded)
        cdef bint plain = _csv_plain(set_id) and _csv_plain(case_id)
        if plain and prompt is not None:
            plain = _csv_plain(<str>prompt)
        if plain and response is not None:
            plain = _csv_plain(<str>response)
        if plain and reference is not None:
            plain = _csv_plain(<str>reference)
        if plain:
            out.put_str(set_id)
            out.put_bytes(b",")
            out.put_str(case_id)
            out.put_bytes(b",0,,")
            if prompt is not None:
                out.put_str(<str>prompt)
            out.put_bytes(b",")
            if response is not None:
                out.put_str(<str>response)
            if reference is not None:
                out.put_bytes(b",")
                out.put_str(<str>reference)
        else:
            head = [set_id, case_id, 0, None, prompt, response]
            if reference is not None:
                head.append(reference)
            out.put_str(csv_fields(head))
        for i in range(n):
            out.put_bytes(b",")
            out.put_str(<str>(<EncodedMetric>PyList_GET_ITEM(encoded, i)).csv)
        return out.put_bytes(b"\r\n")


cdef str _csv_cell(str text):
    """`text` as one cell of the CSV report (excel dialect, minimal quoting), for text
    without NUL."""
    if _csv_plain(text):
        return text
    return '"' + text.replace('"', '""') + '"'


cdef bint _put_flat_object(_Buffer out, dict args) except -1:
    """`args` as orjson writes it, when its values are strings, integers of 64 bits,
    booleans and nulls (else nothing is written and False returned)."""
    cdef Py_ssize_t mark = out.size
    cdef bint first = True
    cdef long long number
    cdef int overflow
    cdef char digits[24]
    cdef int length
    out.put_bytes(b"{")
    for key, value in args.items():
        if type(key) is not str:
            out.size = mark
            return False
        if not first:
            out.put_bytes(b",")
        first = False
        out.put_json(<str>key)
        out.put_bytes(b":")
        kind = type(value)
        if kind is str:
            out.put_json(<str>value)
        elif kind is int:
            number = PyLong_AsLongLongAndOverflow(value, &overflow)
            if overflow:
                out.size = mark
                return False
            length = snprintf(digits, 24, "%lld", number)
            out.put(digits, length)
        elif value is None:
            out.put_bytes(b"null")
        elif value is True:
            out.put_bytes(b"true")
        elif value is False:
            out.put_bytes(b"false")
        else:
            out.size = mark
            return False
    out.put_bytes(b"}")
    return True


cdef inline Py_ssize_t _separate(_Buffer out, Py_ssize_t parts) except -1:
    if parts:
        out.put_bytes(b"; ")
    return parts + 1


cdef int _wrong_argument(_Buffer out, str name, object key, object want,
                         object got) except -1:
    out.put_bytes(b"wrong argument ")
    out.put_str(name)
    out.put_bytes(b".")
    out.put_str(<str>key)
    out.put_bytes(b": expected ")
    if want is _MISSING:
        out.put_bytes(b"(absent)")
    else:
        _format_value(out, want)
    out.put_bytes(b", got ")
    if got is _MISSING:
        return out.put_bytes(b"(absent)")
    return _format_value(out, got)


cdef int _format_call(_Buffer out, list calls, Py_ssize_t i) except -1:
    """`calldiff.format_call`: `name(key="value", n=22)`."""
    cdef bint first = True
    out.put_str(<str>PyList_GET_ITEM(calls, 2 * i))
    out.put_bytes(b"(")
    for key, value in (<dict>PyList_GET_ITEM(calls, 2 * i + 1)).items():
        if not first:
            out.put_bytes(b", ")
        first = False
        out.put_str(<str>key)
        out.put_bytes(b"=")
        _format_value(out, value)
    return out.put_bytes(b")")


cdef int _format_value(_Buffer out, object value) except -1:
    """`calldiff.format_value`: strings as JSON strings (the same escapes as orjson's),
    integers, null, true and false here; anything else by calldiff itself."""
    cdef type kind = type(value)
    if kind is str:
        return out.put_json(<str>value)
    if kind is int:
        return out.put_str(int.__repr__(value))
    if value is None:
        return out.put_bytes(b"null")
    if kind is bool:
        return out.put_bytes(b"true" if value else b"false")
    return out.put_str(format_value(value))


cdef bint _same_value(object a, object b) except -1:
    """`calldiff.same_value` (JSON equality), strings and integers here."""
    cdef type ta = type(a), tb = type(b)
    if ta is str and tb is str:
        return PyObject_RichCompareBool(a, b, Py_EQ)
    if ta is int and tb is int:
        return PyObject_RichCompareBool(a, b, Py_EQ)
    return bool(same_value(a, b))


cdef bint _blank(const char* line, Py_ssize_t n) noexcept:
    """`bytes.isspace`: not empty, and only ASCII white space."""
    cdef Py_ssize_t i
    cdef char c
    if n == 0:
        return False
    for i in range(n):
        c = line[i]
        if not (c == 32 or c == 9 or c == 10 or c == 13 or c == 11 or c == 12):
            return False
    return True


cdef bint _long_digits(const char* line, Py_ssize_t n) noexcept:
    """`formats.stream.may_hold_big_int`: nineteen digits in a row."""
    cdef Py_ssize_t i, run = 0
    cdef char c
    for i in range(n):
        c = line[i]
        if 48 <= c <= 57:
            run += 1
            if run >= 19:
                return True
        else:
            run = 0
    return False


_MEMO_SIZE = 20_000  # encoded results kept (a few KB each): a few tens of MB at most
_FORMAT_HEAD = b'{"format":' + orjson.dumps(FORMAT) + b',"case_id":'


cdef list _calls(object value):
    """A trajectory cell of the plain shape as [name, args, name, args, ...], [] for
    None, else None."""
    cdef list out = []
    cdef Py_ssize_t i, n
    if value is None:
        return out
    if type(value) is not list:
        return None
    n = PyList_GET_SIZE(value)
    for i in range(n):
        item = <object>PyList_GET_ITEM(value, i)
        if type(item) is not dict:
            return None
        size = PyDict_Size(item)
        name = (<dict>item).get("tool_name")
        args = (<dict>item).get("tool_input", _MISSING)
        # Only the two keys (both, or the name alone).
        if size != (1 if args is _MISSING else 2):
            return None
        if type(name) is not str:
            return None
        if args is _MISSING or args is None:
            args = {}
        elif type(args) is not dict:
            return None
        out.append(name)
        out.append(args)
    return out


_MISSING = object()


cdef bint _same_call(int mode, object e_name, object e_args, object a_name,
                     object a_args) except -1:
    # call_equal.match_exact / match_name, on the cells.
    if not PyObject_RichCompareBool(e_name, a_name, Py_EQ):
        return False
    if mode == M_NAME:
        return True
    if not PyObject_RichCompareBool(e_args, a_args, Py_EQ):
        return False
    for k, v in (<dict>e_args).items():
        t = type(v)
        if t is str or (t is int and type((<dict>a_args)[k]) is not bool):
            continue
        if not same_json(v, (<dict>a_args)[k]):
            return False
    return True


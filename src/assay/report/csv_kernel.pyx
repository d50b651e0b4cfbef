# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The CSV report's spooled lines put under the union of the run's columns, in C.

`report.json_report._write_csv_lines` does this in Python, record by record, after the
last row is scored: with rows of several shapes (a metric explains only the rows it
does not score perfectly, so its explanation column comes and goes) that cost a
noticeable share of a row's time, in one process while the others waited. `remap_csv` does the same work on a chunk
of the spool at a time. It exists only compiled (`assay._native.KERNELS`); without it
the Python loop runs, with the same bytes (tests/report/test_csv_kernel.py).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy



def remap_csv(bytes data, Py_ssize_t plain, list picks, Py_ssize_t columns, bint last):
    """`json_report._write_csv_lines`' loop over the complete records of `data`: each
    spooled CSV record (the first `plain` bytes are shape 0's lines without their
    shape's number, the rest `number,fields...`) with its fields picked by its shape's
    `picks` (a list of column indexes per shape; an index past the record's fields picks
    an empty field) and joined again.

    Returns (the lines, the bytes of `data` used, `plain` left); a record cut at the
    end of `data` is left for the next call, unless `last`. None where a record is not
    one this module spooled (the caller then does it the Python way)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), p = 0, lines = 0, bound
    cdef const char* text = PyBytes_AS_STRING(data)
    cdef char* out
    for pick in picks:
        # Each field at most once (the bound below counts on it): a shape's columns are
        # distinct, and its missing ones share one index past its fields, its largest.
        missing = max(pick, default=0)
        chosen = [index for index in pick if index != missing]
        if len(set(chosen)) != len(chosen):
            return None
    for p in range(n):
        lines += text[p] == 10
    # A line's fields are its record's, each at most once, and empty ones: the lines
    # are at most the records' bytes and a comma and line end per column.
    bound = n + (lines + 1) * (columns + 2)
    out = <char*>malloc(bound)
    if out == NULL:
        raise MemoryError()
    try:
        return _remap(text, n, plain, picks, columns, last, out)
    finally:
        free(out)


cdef object _remap(const char* text, Py_ssize_t n, Py_ssize_t plain, list picks,
                   Py_ssize_t columns, bint last, char* out):
    cdef Py_ssize_t p = 0, start, end, q, number, k, index, size = 0, length
    cdef Py_ssize_t quotes
    cdef Py_ssize_t field_at[4096]
    cdef Py_ssize_t field_end[4096]
    cdef Py_ssize_t fields
    cdef tuple pick
    while p < n:
        # A record runs to a line end outside quotes.
        start = p
        quotes = 0
        end = -1
        q = p
        while q < n:
            if text[q] == 34:
                quotes += 1
            elif text[q] == 10 and quotes % 2 == 0:
                end = q + 1
                break
            q += 1
        if end < 0:
            if not last:
                break
            end = n
        p = end
        if plain > 0:
            number = 0
            plain -= end - start
        else:
            number = 0
            q = start
            while q < end and 48 <= text[q] <= 57:
                number = number * 10 + (text[q] - 48)
                q += 1
            if q == start or q >= end or text[q] != 44 or number >= len(picks):
                return None
            start = q + 1
        # The fields, without the record's "\r\n".
        if end - start < 2 or text[end - 2] != 13 or text[end - 1] != 10:
            return None
        end -= 2
        fields = 0
        q = start
        while True:
            if fields >= 4095:
                return None
            field_at[fields] = q
            if q < end and text[q] == 34:  # quoted: up to its closing quote
                q += 1
                while q < end:
                    if text[q] == 34:
                        if q + 1 < end and text[q + 1] == 34:
                            q += 2
                            continue
                        break
                    q += 1
                q += 1
                if q < end and text[q] != 44:
                    return None
            else:
                while q < end and text[q] != 44:
                    q += 1
            field_end[fields] = q
            fields += 1
            if q >= end:
                break
            q += 1  # the comma
        field_at[fields] = field_end[fields] = end  # the empty field for missing columns
        pick = <tuple>picks[number]
        if len(pick) != columns:
            return None
        for k in range(columns):
            index = <Py_ssize_t>pick[k]
            if index > fields:
                return None
            if k:
                out[size] = 44
                size += 1
            length = field_end[index] - field_at[index]
            memcpy(out + size, text + field_at[index], length)
            size += length
        out[size] = 13
        out[size + 1] = 10
        size += 2
    return PyBytes_FromStringAndSize(out, size), p, plain


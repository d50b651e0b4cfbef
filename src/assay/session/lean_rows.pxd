# Cython declarations for the compiled copy of lean_rows.py (assay._native): the three
# per-row classes as extension types, so their attributes are read as C fields.

cdef class LeanCall:
    cdef public str name
    cdef public dict args

cdef class EncodedMetric:
    cdef public object result
    cdef public bytes stored
    cdef public bytes overall
    cdef public bytes invocation
    cdef public object columns
    cdef public object csv
    cdef public bytes columns_json
    cdef public Py_ssize_t columns_id
    cdef public object explanation_entry

cdef class LeanRow:
    cdef public str case_id
    cdef public object prompt
    cdef public object response
    cdef public object reference
    cdef public list predicted
    cdef public list reference_calls
    cdef public list metrics
    cdef public object status

# Cython declarations for the compiled copy of lean_score.py (assay._native).

import cython

from assay.session.lean_rows cimport EncodedMetric, LeanRow

cdef class LeanPlan:
    cdef public list metrics
    cdef public dict _memo
    cdef public dict _by_count
    cdef public list _kinds

    @cython.locals(one=EncodedMetric, cached=EncodedMetric, encoded=list, statuses=list,
                   memo=dict, explained=dict, exact=dict, i=Py_ssize_t, kind=Py_ssize_t)
    cpdef score(self, LeanRow lean)

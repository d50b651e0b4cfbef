# Cython declarations for the compiled copy of lean_encode.py (assay._native): the row's
# and its metrics' fields read as C fields of the lean_rows extension types.

import cython

from assay.session.lean_rows cimport EncodedMetric, LeanCall, LeanRow

@cython.locals(c=LeanCall)
cpdef list _calls(list calls)

@cython.locals(c=bytes)
cpdef bytes _stored_turn(object prompt, list calls, object final)

cpdef tuple store_row(LeanRow lean, str eval_set_id, object calls=*)

@cython.locals(m=EncodedMetric, metrics=list)
cpdef bytes _store_document(LeanRow lean, str eval_set_id, list predicted, list expected)

@cython.locals(m=EncodedMetric, metrics=list)
cpdef bytes report_case(
    LeanRow lean, str eval_set_id, object run_id, object eval_set_file, object calls=*
)

cpdef tuple encoded_calls(LeanRow lean)

@cython.locals(m=EncodedMetric, metrics=list)
cpdef tuple report_row(LeanRow lean, str eval_set_id)

@cython.locals(m=EncodedMetric)
cpdef bytes report_csv_line(LeanRow lean, str eval_set_id)

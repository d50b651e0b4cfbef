# Cython declarations for the compiled copy of stats.py (assay._native): the squared
# deviations in a loop over C doubles, squared by the C library's pow (what Python's
# ** calls).

import cython

from libc.math cimport pow

cdef double _SQUARE

@cython.locals(view=double[:], i=Py_ssize_t, m=double)
cpdef _squared_deviations(values, double m)

"""The fast tier of the recorded-row path.

- `plan`: which metric of a run the row kernel computes, and the Python scoring of the
  others on the kernel's rows (per metric, never per run).
- `kernel` (`kernel.pyx`, compiled only): a plain row read, scored and written in one
  pass of C.
- `batch`: a batch of rows scored where it runs (a worker), by the kernel or the
  reference path row by row.
- `writes`: what the workers of a pool write themselves, in file order (`WorkerWrites`).

The ordinary metrics and writers (`engine`, `store`, `report`) are the reference: the
kernel writes byte for byte what they write, and they score every row the kernel does
not read, and every row when the kernel is not compiled.
"""

"""Types of the compiled CSV kernel (`csv_kernel.pyx`; see its docstring)."""

def remap_csv(
    data: bytes, plain: int, picks: list[tuple[int, ...]], columns: int, last: bool
) -> tuple[bytes, int, int] | None: ...

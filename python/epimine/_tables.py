"""Tables handed to Python through the Arrow C stream interface (the Arrow PyCapsule
interface), so that any Arrow reader takes them without a copy through Python:
``pl.DataFrame(t)``, ``pa.table(t)``, ``pd.DataFrame.from_arrow(t)`` (pandas 3), DuckDB's
``duckdb.sql("select * from t")``. epimine itself needs none of these libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars
    import pyarrow

    from . import _epimine


class Table:
    """One table of a run or a corpus (``episodes``, ``assignments``, ``segments``, …), read
    whole. Its columns are documented in docs/tables.md.

    It implements ``__arrow_c_stream__``: hand it to the Arrow library you use, as many times
    as you like::

        pl.DataFrame(run.episodes)
        pa.table(run.episodes)
        run.episodes.to_pandas()
    """

    def __init__(self, native: _epimine.Table, name: str, location: str) -> None:
        self._native = native
        #: The table's name (its file name without ``.parquet``).
        self.name = name
        #: Where it was read from.
        self.location = location

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule interface: a capsule holding an ``ArrowArrayStream`` of the
        table (``requested_schema`` is not applied)."""
        return self._native.__arrow_c_stream__(requested_schema)

    @property
    def num_rows(self) -> int:
        """Rows."""
        return self._native.num_rows

    def __len__(self) -> int:
        return self._native.num_rows

    @property
    def column_names(self) -> list[str]:
        """Column names, in order."""
        return self._native.column_names

    @property
    def schema(self) -> list[str]:
        """Each column as ``name: Arrow type`` (``?`` when it may be null)."""
        return self._native.schema_text

    def to_arrow(self) -> pyarrow.Table:
        """As a ``pyarrow.Table`` (needs pyarrow)."""
        import pyarrow as pa

        return pa.table(self)

    def to_polars(self) -> polars.DataFrame:
        """As a ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.DataFrame(self)

    def to_pandas(self) -> pandas.DataFrame:
        """As a ``pandas.DataFrame`` (needs pandas; pandas < 3 also pyarrow)."""
        import pandas as pd

        from_arrow: Any = getattr(pd.DataFrame, "from_arrow", None)
        if from_arrow is not None:
            return from_arrow(self)
        return self.to_arrow().to_pandas()

    def __repr__(self) -> str:
        columns = ", ".join(self.column_names)
        return f"<epimine.Table {self.name}: {self.num_rows} rows; {columns}>"

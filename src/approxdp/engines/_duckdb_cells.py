"""The grid of cells on DuckDB: the aggregate left-joined onto every cell of a domain's cross
product, streamed batch by batch through a function into Parquet (for
:meth:`approxdp.engines.duckdb.DuckDBEngine.map_cells`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from approxdp.engines._duckdb_sql import cells_sql, sql_literal
from approxdp.engines.shapes import CellAggregate, CellBatchMapper, CellMapRequest, CellMapResult
from approxdp.errors import DataError

if TYPE_CHECKING:
    import duckdb

__all__ = ["CELL_BATCH_ROWS", "stream_cells"]

#: Rows per Arrow batch streamed from the join.
CELL_BATCH_ROWS = 1 << 17


def stream_cells(
    connection: duckdb.DuckDBPyConnection, request: CellMapRequest, aggregate: CellAggregate,
    out_path: str, n: int,
) -> CellMapResult:
    """Register the aggregate and the grid's value lists (names suffixed ``n``), stream the
    join of :func:`~approxdp.engines._duckdb_sql.cells_sql` through ``request.function`` into
    the Parquet file ``out_path``, unregister everything and close ``aggregate``; return a view
    of the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    agg: pa.Table = aggregate.handle
    rows_used = aggregate.rows_used
    names = [a.name for a in request.aggregate.aggregations]
    agg_cols = {f"k{i}": agg.column(c) for i, c in enumerate(request.aggregate.by)}
    agg_cols.update({f"m{j}": agg.column(a) for j, a in enumerate(names)})
    connection.register(f"__approxdp_agg_{n}", pa.table(agg_cols))
    grids = []
    for i, (col, values) in enumerate(request.grid):
        try:
            arr = pa.array(list(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DataError(f"domain[{col!r}] mixes value types: {exc}") from exc
        grids.append(f"__approxdp_grid_{n}_{i}")
        connection.register(
            grids[-1], pa.table({"v": arr, "pos": pa.array(range(len(values)), pa.int64())})
        )
    sql = cells_sql(request, f"__approxdp_agg_{n}", grids)
    mapper = CellBatchMapper.of(request)
    rel = connection.sql(sql)
    fetch = getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch
    reader = fetch(CELL_BATCH_ROWS)
    writer = None
    try:
        for batch in reader:
            mapped = mapper(batch)
            if writer is None:
                writer = pq.ParquetWriter(out_path, mapped.schema)
            writer.write_batch(mapped)
    finally:
        reader.close()  # an undrained result would block the connection
        del rel
        if writer is not None:
            writer.close()
        connection.unregister(f"__approxdp_agg_{n}")
        for i in range(len(request.grid)):
            connection.unregister(f"__approxdp_grid_{n}_{i}")
        aggregate.close()
    view = connection.sql(f"SELECT * FROM read_parquet({sql_literal(out_path)})")
    return CellMapResult(view, out_path, request.n_cells, rows_used)

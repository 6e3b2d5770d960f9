"""Reads files written by sparklance's FileWriter21 with pylance and compares them with the
expected rows (Arrow IPC files written from the same vectors). Usage: check_pylance.py DIR
DIR/cases.txt lists one case per line: name <TAB> kind (file|dataset) <TAB> path <TAB> expected files (comma-separated)."""
import os
import sys

import lance
import pyarrow as pa
import pyarrow.compute as pc
from lance.file import LanceFileReader


def expected_table(paths):
    tables = []
    for p in paths:
        with pa.memory_map(p) as src:
            tables.append(pa.ipc.open_file(src).read_all())
    return pa.concat_tables(tables)


def describe(arr, i):
    try:
        return repr(arr.slice(i, 1).to_pylist())
    except Exception as e:  # values out of Python's ranges
        return f"<{arr.slice(i, 1)} ({e})>"


def compare(case, exp, act):
    if exp.num_rows != act.num_rows:
        raise AssertionError(f"{case}: {act.num_rows} rows, expected {exp.num_rows}")
    if exp.column_names != act.column_names:
        raise AssertionError(f"{case}: columns {act.column_names}, expected {exp.column_names}")
    for name in exp.column_names:
        e = exp.column(name).combine_chunks()
        a = act.column(name).combine_chunks()
        if e.type != a.type:
            e = e.cast(a.type)
        if not e.equals(a):
            bad = next((i for i in range(len(e)) if not e.slice(i, 1).equals(a.slice(i, 1))), None)
            raise AssertionError(f"{case}: column {name} ({a.type}) differs at row {bad}: "
                                 f"got {describe(a, bad)}, expected {describe(e, bad)}")


def valid_under_null_struct(path, arr):
    """The fields of `arr` (at any depth) that pylance reads as valid in a row whose struct is NULL.
    Arrow lets a child hold a value there and compares struct arrays without looking at it, but a
    query on `st.a` reads the child: pylance gives it the struct's nulls only if the file declares
    the child's layer nullable, as pylance's own files do."""
    found = []
    if pa.types.is_struct(arr.type):
        for i in range(arr.type.num_fields):
            name, child = f"{path}.{arr.type.field(i).name}", arr.field(i)
            if arr.null_count and pc.any(pc.and_(arr.is_null(), child.is_valid())).as_py():
                found.append(name)
            found += valid_under_null_struct(name, child)
    elif pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        found += valid_under_null_struct(f"{path}.item", arr.flatten())
    return found


def check_struct_nulls(case, table):
    found = [f for name in table.column_names for f in valid_under_null_struct(name, table.column(name).combine_chunks())]
    if found:
        raise AssertionError(f"{case}: fields valid in rows whose struct is NULL: {found}")


def main(d):
    failures = []
    n = 0
    with open(os.path.join(d, "cases.txt")) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    for line in lines:
        name, kind, path, files = line.split("\t")
        exp = expected_table([os.path.join(d, p) for p in files.split(",") if p])
        try:
            if kind == "file":
                act = LanceFileReader(os.path.join(d, path)).read_all().to_table()
                compare(name, exp, act)
                check_struct_nulls(name, act)
            else:
                ds = lance.dataset(os.path.join(d, path))
                scanned = ds.to_table()
                compare(name + " (scan)", exp, scanned)
                check_struct_nulls(name + " (scan)", scanned)
                if exp.num_rows > 0:
                    idx = {(i * 7919) % exp.num_rows for i in range(min(exp.num_rows, 97))}
                    idx |= {i for i in (5, 7, 1007, 7007, exp.num_rows - 1) if i < exp.num_rows}
                    idx = sorted(idx)
                    compare(name + " (take)", exp.take(idx), ds.take(idx))
                    off, lim = exp.num_rows // 3, max(1, exp.num_rows // 4)
                    compare(name + " (range)", exp.slice(off, lim), ds.to_table(offset=off, limit=lim))
                    cols = exp.column_names[: max(1, len(exp.column_names) // 3)]
                    compare(name + " (projection)", exp.select(cols), ds.to_table(columns=cols))
            n += 1
        except Exception as e:  # report every case, not just the first
            failures.append(f"{name}: {type(e).__name__}: {e}")
    for f in failures:
        print("FAIL", f)
    print(f"checked {n} of {len(lines)} cases")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv[1])

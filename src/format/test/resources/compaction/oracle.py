"""pylance as the compaction oracle for CompactionOracleSuite.

build <dir> <stable>        writes the table of LANCE-MAINTENANCE.md 1.2 (fragments of 100 / 1000 rows,
                            20% of fragment 4 and one row of fragment 6 deleted) to <dir>/base.lance
compact <dir> <json>        for each {name: options} copies base.lance to <dir>/pylance-<name>.lance
                            and runs compact_files(**options) on the copy
describe <path>...          prints one line of JSON per table: fragments, rows in scan order, lineage
"""
import json, shutil, sys
import lance, pyarrow as pa

def build(root, stable):
    path = f"{root}/base.lance"
    start = 0
    for i, n in enumerate([100, 100, 1000, 100, 1000, 100, 1000, 100, 100, 100]):
        t = pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                      "s": pa.array([f"row {k}" for k in range(start, start + n)])})
        lance.write_dataset(t, path, mode="append" if i else "create", enable_stable_row_ids=stable,
                            data_storage_version="2.1")
        start += n
    ds = lance.dataset(path)
    ds.delete("id >= 1400 and id < 1600")  # 200 of fragment 4 (rows 1300..2299)
    ds.delete("id = 2500")                 # one row of fragment 6 (rows 2400..3399)

def compact(root, variants):
    for name, options in json.loads(variants).items():
        target = f"{root}/pylance-{name}.lance"
        shutil.copytree(f"{root}/base.lance", target)
        lance.dataset(target).optimize.compact_files(**options)

def describe(path):
    ds = lance.dataset(path)
    t = ds.to_table(columns=["id", "s", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"])
    return {
        "version": ds.version,
        "fragments": [[f.fragment_id, f.metadata.physical_rows, f.count_rows()] for f in ds.get_fragments()],
        "ids": t.column("id").to_pylist(),
        "strings_ok": t.column("s").to_pylist() == [f"row {k}" for k in t.column("id").to_pylist()],
        "rowids": t.column("_rowid").to_pylist(),
        "created": t.column("_row_created_at_version").to_pylist(),
        "updated": t.column("_row_last_updated_at_version").to_pylist(),
    }

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "build":
        build(args[0], args[1] == "true")
    elif cmd == "compact":
        compact(args[0], args[1])
    elif cmd == "describe":
        for p in args:
            print(json.dumps(describe(p), sort_keys=True))

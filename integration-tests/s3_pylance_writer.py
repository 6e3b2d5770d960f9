"""A pylance writer racing Spark on one S3 table (test_s3.py): appends, updates, deletes and
merge_inserts on its own ids, retrying commit conflicts. Prints, as its last line, JSON with its
id base, the rows it expects of its ids, and the operations that landed."""
import json
import sys
import time

import lance
import pyarrow as pa

path, options, ops = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
base, model, landed = 3_000_000, {}, []


def retrying(action):
    for attempt in range(60):
        try:
            return action()
        except OSError as e:  # pylance's commit conflict ("Retryable commit conflict", "conflict")
            if "onflict" not in str(e):
                raise
            time.sleep(0.05 * (1 + attempt % 5))
    raise RuntimeError(f"gave up after conflicts: {path}")


def table(rows):
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": pa.array([r[1] for r in rows], pa.int64())})


for i in range(ops):
    kind = ["append", "update", "delete", "merge"][i % 4]
    ids = [base + i * 10 + j for j in range(10)]
    mine = f"id >= {base} AND id < {base + 1_000_000}"
    if kind == "append":
        retrying(lambda: lance.write_dataset(table([(x, 0) for x in ids]), path, mode="append", storage_options=options))
        model.update({x: 0 for x in ids})
    elif kind == "update":
        retrying(lambda: lance.dataset(path, storage_options=options).update({"v": "v + 1"}, where=f"{mine} AND id % 3 = 0"))
        model.update({x: y + 1 for x, y in model.items() if x % 3 == 0})
    elif kind == "delete":
        retrying(lambda: lance.dataset(path, storage_options=options).delete(f"{mine} AND id % 7 = {i % 7}"))
        model = {x: y for x, y in model.items() if x % 7 != i % 7}
    else:
        source = [base + (i - 3) * 10 + j for j in range(5, 15)]
        new = {x: model[x] + 100 if x in model else 100 for x in source}
        retrying(lambda: lance.dataset(path, storage_options=options).merge_insert("id")
                 .when_matched_update_all().when_not_matched_insert_all().execute(table(sorted(new.items()))))
        model.update(new)
    landed.append(kind)
print(json.dumps({"base": base, "model": {str(k): v for k, v in model.items()}, "landed": landed}))

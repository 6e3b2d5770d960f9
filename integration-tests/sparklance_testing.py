"""Test-only helpers that forge table states pylance would not write."""
import os
import struct


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def set_reader_flags(table_path, flags):
    """Rewrite the latest manifest so reader_feature_flags (field 9) = flags.

    Appending a second occurrence of a scalar field overrides the first in protobuf, so the
    message is extended in place; its length prefix and the file tail are adjusted."""
    versions = os.path.join(table_path, "_versions")
    latest = sorted(f for f in os.listdir(versions) if f.endswith(".manifest"))[0]
    path = os.path.join(versions, latest)
    data = open(path, "rb").read()
    pos, = struct.unpack_from("<q", data, len(data) - 16)
    length, = struct.unpack_from("<I", data, pos)
    message = data[pos + 4:pos + 4 + length] + b"\x48" + _varint(flags)
    rewritten = data[:pos] + struct.pack("<I", len(message)) + message + data[-16:]
    with open(path, "wb") as f:
        f.write(rewritten)


def _fields(message):
    """Top-level (field number, value) pairs of a protobuf message: ints for varints, bytes otherwise."""
    i, out = 0, []
    while i < len(message):
        key, i = _read_varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(message, i)
        elif wire == 2:
            n, i = _read_varint(message, i)
            value, i = message[i:i + n], i + n
        else:
            n = 8 if wire == 1 else 4
            value, i = message[i:i + n], i + n
        out.append((number, value))
    return out


def _read_varint(data, i):
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def feature_flags(table_path):
    """(reader, writer) feature flags of the latest manifest (fields 9 and 10), which pylance does not expose."""
    versions = os.path.join(table_path, "_versions")
    latest = sorted(f for f in os.listdir(versions) if f.endswith(".manifest"))[0]
    data = open(os.path.join(versions, latest), "rb").read()
    pos, = struct.unpack_from("<q", data, len(data) - 16)
    length, = struct.unpack_from("<I", data, pos)
    fields = dict(_fields(data[pos + 4:pos + 4 + length]))
    return fields.get(9, 0), fields.get(10, 0)


def index_entries(table_path):
    """The index section of the latest manifest (field 6 of the manifest gives its offset), one dict an entry:
    name, uuid (hex), fields, dataset_version, details (the VectorIndexDetails etc. bytes) and details_type."""
    versions = os.path.join(table_path, "_versions")
    latest = sorted(f for f in os.listdir(versions) if f.endswith(".manifest"))[0]
    data = open(os.path.join(versions, latest), "rb").read()
    pos, = struct.unpack_from("<q", data, len(data) - 16)
    length, = struct.unpack_from("<I", data, pos)
    section = dict(_fields(data[pos + 4:pos + 4 + length])).get(6)
    if section is None:
        return []
    n, = struct.unpack_from("<I", data, section)
    out = []
    for number, entry in _fields(data[section + 4:section + 4 + n]):
        if number != 1:
            continue
        f = _fields(entry)
        one = dict(f)
        details = dict(_fields(one.get(6, b"")))
        out.append({"name": one[3].decode(), "uuid": dict(_fields(one[1]))[1].hex(), "dataset_version": one.get(4, 0),
                    "details_type": details.get(1, b"").decode(), "details": details.get(2, b"")})
    return out


def vector_distances(data, query, metric):
    """The distance of each row of `data` (rows x dim) from `query` by numpy in float64, in pylance's
    units: squared L2, 1 - cosine similarity, 1 - inner product."""
    import numpy as np
    x, q = np.asarray(data, np.float64), np.asarray(query, np.float64)
    if metric == "l2":
        return ((x - q) ** 2).sum(axis=1)
    if metric == "cosine":
        return 1 - (x @ q) / (np.linalg.norm(x, axis=1) * np.linalg.norm(q))
    return 1 - x @ q

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

"""Canonical text of pylance values, as the Scala suites' Canon renders vectors (one value per cell)."""
import struct
import numpy as np
import pyarrow as pa


def canon(v, t):
    """null, true/false, integers, float bits (f:hex), bytes as x:hex, [a,b], {a=..,b=..}."""
    if v is None:
        return "null"
    if pa.types.is_boolean(t):
        return "true" if v else "false"
    if pa.types.is_floating(t):
        if t.bit_width == 16:
            return "h:%04x" % np.array([v], np.float16).view(np.uint16)[0]
        if t.bit_width == 32:
            return "f:%08x" % struct.unpack("<I", struct.pack("<f", v))[0]
        return "d:%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]
    if pa.types.is_decimal(t):
        return str(int(v.scaleb(t.scale)))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "x:" + v.encode("utf-8").hex()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "x:" + v.hex()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "[" + ",".join(canon(x, t.value_type) for x in v) + "]"
    if pa.types.is_struct(t):
        return "{" + ",".join(f.name + "=" + canon(v[f.name], f.type) for f in t) + "}"
    return str(int(v))


def ints_view(a):
    """Temporal columns as their integer storage, so that canon() sees plain integers."""
    t = a.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return a.cast(pa.int32())
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return a.cast(pa.int64())
    return a

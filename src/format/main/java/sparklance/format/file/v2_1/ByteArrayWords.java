package sparklance.format.file.v2_1;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Little-endian words read and written in place in byte arrays. In Java because the JIT turns a
 * VarHandle access into one load or store only when the handle is a static final constant, which
 * the field of a Scala object is not: held there, the handles' index checks were top frames of a
 * JFR profile of scans. Public for the 2.0 reader's `LittleEndian`.
 */
public final class ByteArrayWords {
    private static final VarHandle SHORTS = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private ByteArrayWords() {}

    static long u16(byte[] a, int at) { return (short) SHORTS.get(a, at) & 0xffffL; }
    static int u16i(byte[] a, int at) { return (short) SHORTS.get(a, at) & 0xffff; }
    static long u32(byte[] a, int at) { return (int) INTS.get(a, at) & 0xffffffffL; }
    static int i32(byte[] a, int at) { return (int) INTS.get(a, at); }
    public static long i64(byte[] a, int at) { return (long) LONGS.get(a, at); }

    static void put16(byte[] a, int at, long v) { SHORTS.set(a, at, (short) v); }
    static void put16(byte[] a, int at, int v) { SHORTS.set(a, at, (short) v); }
    static void put32(byte[] a, int at, long v) { INTS.set(a, at, (int) v); }
    static void put32(byte[] a, int at, int v) { INTS.set(a, at, v); }
    public static void put64(byte[] a, int at, long v) { LONGS.set(a, at, v); }
}

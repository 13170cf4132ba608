/* SPDX-License-Identifier: MIT */
/*
 * PyroCheck — checks what Pyroscope gets from a ctxprof JFR file and its labels snapshot
 * (FILE.labels.pb, a LabelsSnapshot protobuf: contexts = map<int64, Context{map<int64,int64>
 * labels}>, strings = map<int64, string>), the way Pyroscope joins them: every
 * jdk.ExecutionSample whose contextId != 0 must find its context in the snapshot, and that
 * context's labels (key and value strings) must equal the labels of the sample's `context`
 * chain read with RecordingFile. The protobuf is decoded here by hand (wire format), not by
 * the code that wrote it.
 *   java -cp build/java PyroCheck FILE.jfr FILE.labels.pb
 * Prints "samples N context N span N contexts N"; exit 1 on any mismatch.
 */
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordingFile;

public class PyroCheck {
    static long varint(ByteBuffer b) {
        long v = 0;
        for (int s = 0;; s += 7) {
            int x = b.get() & 0xff;
            v |= (long) (x & 0x7f) << s;
            if (x < 0x80)
                return v;
        }
    }

    /* Calls back (field, varint value or -1, bytes or null) for each field of a message. */
    interface Field { void on(int field, long v, ByteBuffer bytes); }

    static void fields(ByteBuffer b, Field f) {
        while (b.hasRemaining()) {
            long tag = varint(b);
            int field = (int) (tag >>> 3), wt = (int) (tag & 7);
            if (wt == 0) {
                f.on(field, varint(b), null);
            } else if (wt == 2) {
                int n = (int) varint(b);
                ByteBuffer sub = b.slice(b.position(), n);
                b.position(b.position() + n);
                f.on(field, -1, sub);
            } else {
                throw new IllegalStateException("wire type " + wt);
            }
        }
    }

    public static void main(String[] a) throws Exception {
        Map<Long, Map<Long, Long>> contexts = new HashMap<>();
        Map<Long, String> strings = new HashMap<>();
        ByteBuffer pb = ByteBuffer.wrap(Files.readAllBytes(Path.of(a[1])));
        fields(pb, (field, v, bytes) -> {
            long[] key = {0};
            Object[] val = {null};
            fields(bytes, (f2, v2, b2) -> {
                if (f2 == 1) key[0] = v2;
                else if (field == 2) val[0] = StandardCharsets.UTF_8.decode(b2).toString();
                else {
                    Map<Long, Long> labels = new HashMap<>();
                    fields(b2, (f3, v3, b3) -> {
                        long[] kv = new long[2];
                        fields(b3, (f4, v4, b4) -> kv[f4 - 1] = v4);
                        labels.put(kv[0], kv[1]);
                    });
                    val[0] = labels;
                }
            });
            if (field == 1) {
                @SuppressWarnings("unchecked") Map<Long, Long> m = (Map<Long, Long>) val[0];
                if (contexts.put(key[0], m) != null)
                    throw new IllegalStateException("context " + key[0] + " twice");
            } else if (field == 2) {
                if (strings.put(key[0], (String) val[0]) != null)
                    throw new IllegalStateException("string " + key[0] + " twice");
            }
        });
        long samples = 0, withCtx = 0, withSpan = 0, bad = 0;
        try (RecordingFile rf = new RecordingFile(Path.of(a[0]))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                if (!e.getEventType().getName().equals("jdk.ExecutionSample"))
                    continue;
                samples++;
                long ctx = e.getLong("contextId");
                if (e.getLong("spanId") != 0)
                    withSpan++;
                TreeMap<String, String> want = new TreeMap<>();
                for (RecordedObject c = e.getValue("context"); c != null; c = c.getValue("next"))
                    want.put(c.getString("key"), c.getString("value"));
                if (ctx == 0) {
                    if (!want.isEmpty() && bad++ < 5)
                        System.out.println("labels without contextId: " + want);
                    continue;
                }
                withCtx++;
                TreeMap<String, String> got = new TreeMap<>();
                Map<Long, Long> m = contexts.get(ctx);
                if (m != null)
                    for (var kv : m.entrySet())
                        got.put(strings.get(kv.getKey()), strings.get(kv.getValue()));
                if ((m == null || !got.equals(want)) && bad++ < 5)
                    System.out.println("contextId " + ctx + ": snapshot " + (m == null ? "missing" : got)
                            + ", sample " + want);
            }
        }
        System.out.printf("samples %d context %d span %d contexts %d%n", samples, withCtx, withSpan,
                contexts.size());
        System.exit(bad == 0 ? 0 : 1);
    }
}

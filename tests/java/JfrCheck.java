/* SPDX-License-Identifier: MIT */
/*
 * JfrCheck — reads a JFR file with jdk.jfr.consumer.RecordingFile (the JDK's own parser) and
 * prints a canonical dump of what ctxprof wrote, for the C tests to compare against what they
 * put in. It must read context by field name, the way users do:
 *   S thread=NAME/TID state=S stack=T|F then |class.method:line:type per frame (leaf first)
 *   C thread=... span=U root=U key=value ... stack=...   (the same sample, when it has context:
 *                                                          labels from the `context` chain)
 *   N type count                                                  (event counts, sorted)
 * Exit 1 (with a message) on any exception or on a sample that breaks an invariant.
 *   java -cp build/java JfrCheck FILE.jfr
 */
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class JfrCheck {
    static final List<String> FIELDS = List.of("startTime", "sampledThread", "stackTrace", "state",
            "contextBytes", "contextId", "spanId", "localRootSpanId", "context");

    static String thread(RecordedThread t) {
        return t == null ? "null" : t.getOSName() + "/" + t.getOSThreadId();
    }

    static String stack(RecordedStackTrace st) {
        if (st == null)
            return "null";
        StringBuilder b = new StringBuilder(st.isTruncated() ? "T" : "F");
        for (RecordedFrame f : st.getFrames()) {
            b.append('|').append(f.getMethod().getType().getName()).append('.')
                    .append(f.getMethod().getName()).append(':').append(f.getLineNumber())
                    .append(':').append(f.getType());
            if (!"()L;".equals(f.getMethod().getDescriptor()))
                throw new IllegalStateException("descriptor " + f.getMethod().getDescriptor());
        }
        return b.toString();
    }

    /* " key=value" per label of the context chain, keys strictly ascending. */
    static String labels(RecordedObject c) {
        StringBuilder b = new StringBuilder();
        String last = null;
        for (; c != null; c = c.getValue("next")) {
            String k = c.getString("key");
            if (last != null && last.compareTo(k) >= 0 && !sortedBytes(last, k))
                throw new IllegalStateException("labels not sorted: " + last + ", " + k);
            last = k;
            b.append(' ').append(k).append('=').append(c.getString("value"));
        }
        return b.toString();
    }

    static boolean sortedBytes(String a, String b) {
        return java.util.Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8),
                b.getBytes(StandardCharsets.UTF_8)) < 0;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        TreeMap<String, Integer> counts = new TreeMap<>();
        try (RecordingFile rf = new RecordingFile(Path.of(args[0]))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                String type = e.getEventType().getName();
                counts.merge(type, 1, Integer::sum);
                if (!type.equals("jdk.ExecutionSample"))
                    continue;
                List<String> names = e.getFields().stream().map(d -> d.getName()).toList();
                if (!names.equals(FIELDS))
                    throw new IllegalStateException("jdk.ExecutionSample fields " + names);
                RecordedThread t = e.getValue("sampledThread");
                out.println("S thread=" + thread(t) + " state=" + e.getString("state") + " stack="
                        + stack(e.getStackTrace()));
                long ctx = e.getLong("contextId"), span = e.getLong("spanId"),
                        root = e.getLong("localRootSpanId");
                RecordedObject c = e.getValue("context");
                if ((ctx != 0) != (c != null))
                    throw new IllegalStateException("contextId " + ctx + " but context " + c);
                if (ctx == 0 && span == 0 && root == 0)
                    continue;
                out.println("C thread=" + thread(t) + " span=" + Long.toUnsignedString(span)
                        + " root=" + Long.toUnsignedString(root) + labels(c) + " stack="
                        + stack(e.getStackTrace()));
            }
        }
        for (var c : counts.entrySet())
            out.println("N " + c.getKey() + " " + c.getValue());
    }
}

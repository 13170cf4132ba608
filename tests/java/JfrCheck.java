/*
 * JfrCheck — reads a JFR file with jdk.jfr.consumer.RecordingFile (the JDK's own parser) and
 * prints a canonical dump of what ctxprof wrote, for the C tests to compare against what they
 * put in. It must read context by field name, the way users do:
 *   S thread=NAME/TID state=S stack=T|F then |class.method:line:type per frame (leaf first)
 *   C thread=... span=U root=U field(label)=value ... stack=...   (ctxprof.ExecutionSample)
 *   N type count                                                  (event counts, sorted)
 * Exit 1 (with a message) on any exception or on a sample that breaks an invariant.
 *   java -cp build/java JfrCheck FILE.jfr
 */
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class JfrCheck {
    static final List<String> FIXED = List.of("startTime", "sampledThread", "stackTrace", "spanId",
            "localRootSpanId");

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

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        TreeMap<String, Integer> counts = new TreeMap<>();
        try (RecordingFile rf = new RecordingFile(Path.of(args[0]))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                String type = e.getEventType().getName();
                counts.merge(type, 1, Integer::sum);
                if (type.equals("jdk.ExecutionSample")) {
                    if (e.getFields().size() != 4)
                        throw new IllegalStateException("jdk.ExecutionSample has " + e.getFields().size() + " fields");
                    RecordedThread t = e.getValue("sampledThread");
                    out.println("S thread=" + thread(t) + " state=" + e.getString("state") + " stack="
                            + stack(e.getStackTrace()));
                } else if (type.equals("ctxprof.ExecutionSample")) {
                    RecordedThread t = e.getValue("sampledThread");
                    StringBuilder b = new StringBuilder("C thread=" + thread(t));
                    b.append(" span=").append(Long.toUnsignedString(e.getLong("spanId")));
                    b.append(" root=").append(Long.toUnsignedString(e.getLong("localRootSpanId")));
                    for (ValueDescriptor d : e.getFields()) {
                        if (FIXED.contains(d.getName()))
                            continue;
                        String v = e.getString(d.getName());
                        if (v != null)
                            b.append(' ').append(d.getName()).append('(').append(d.getLabel())
                                    .append(")=").append(v);
                    }
                    b.append(" stack=").append(stack(e.getStackTrace()));
                    out.println(b);
                }
            }
        }
        for (var c : counts.entrySet())
            out.println("N " + c.getKey() + " " + c.getValue());
    }
}

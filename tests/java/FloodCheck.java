/* SPDX-License-Identifier: MIT */
// FloodCheck — the facts the hostile flood tests assert, read from a daemon's recording with
// the JDK's own parser (jdk.jfr.consumer.RecordingFile) in one pass: for each group of
// threads (a file of thread ids, one per line), its samples, those with a context
// (contextId != 0) and those without their stack ("[unknown stack]"); and each chunk's
// ctxprof.Statistics counters named on the command line. `jfr print --json` of a flood
// recording and a Python pass over it took about 35 s of a test's time; this takes about 2.
//   java -cp BUILD/java FloodCheck FILE.jfr TIDS_FILE... [--stat FIELD]...
// Prints "GROUP samples=N context=N unknown_stack=N" per group (GROUP: the file's name) and
// "FIELD per chunk: [a, b, ...]" per counter; exits 1 when the file cannot be read.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class FloodCheck {
    static final String UNKNOWN = "[unknown stack]";

    static boolean unknownStack(RecordedStackTrace st) {
        if (st == null) return false; /* no stack at all: not the placeholder counted here */
        for (RecordedFrame f : st.getFrames())
            if (f.getMethod().getName().contains(UNKNOWN)
                    || f.getMethod().getType().getName().contains(UNKNOWN))
                return true;
        return false;
    }

    public static void main(String[] a) throws Exception {
        List<String> groups = new ArrayList<>(), stats = new ArrayList<>();
        Map<Long, Integer> groupOf = new HashMap<>();
        for (int i = 1; i < a.length; i++) {
            if (a[i].equals("--stat")) {
                stats.add(a[++i]);
                continue;
            }
            for (String t : Files.readAllLines(Path.of(a[i])))
                if (!t.isBlank()) groupOf.put(Long.parseLong(t.trim()), groups.size());
            groups.add(Path.of(a[i]).getFileName().toString());
        }
        long[] samples = new long[groups.size()], ctx = new long[groups.size()];
        long[] unknown = new long[groups.size()];
        List<List<Long>> perChunk = new ArrayList<>();
        for (int i = 0; i < stats.size(); i++) perChunk.add(new ArrayList<>());
        try (RecordingFile rf = new RecordingFile(Path.of(a[0]))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                String type = e.getEventType().getName();
                if (type.equals("ctxprof.Statistics")) {
                    for (int i = 0; i < stats.size(); i++)
                        perChunk.get(i).add(e.hasField(stats.get(i)) ? e.getLong(stats.get(i)) : 0);
                    continue;
                }
                if (!type.equals("jdk.ExecutionSample")) continue;
                RecordedThread t = e.getValue("sampledThread");
                Integer g = t == null ? null : groupOf.get(t.getOSThreadId());
                if (g == null) continue;
                samples[g]++;
                if (e.hasField("contextId") && e.getLong("contextId") != 0) ctx[g]++;
                if (unknownStack(e.getStackTrace())) unknown[g]++;
            }
        }
        for (int g = 0; g < groups.size(); g++)
            System.out.printf("%s samples=%d context=%d unknown_stack=%d%n", groups.get(g),
                    samples[g], ctx[g], unknown[g]);
        for (int i = 0; i < stats.size(); i++)
            System.out.println(stats.get(i) + " per chunk: " + perChunk.get(i));
    }
}

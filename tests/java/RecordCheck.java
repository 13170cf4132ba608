/* SPDX-License-Identifier: MIT */
// RecordCheck — reads a JFR file written by `ctxprof record` with the JDK's own parser
// (jdk.jfr.consumer.RecordingFile) and checks the attribution workload (wl_attrib): every
// sample whose stack holds work_A carries label phase=A, spanId 0xA and localRootSpanId 0xA0
// (B likewise), labels read from the sample's `context` chain; threads have names;
// frames are native frames named after their module.
//   java -cp BUILD/java RecordCheck FILE.jfr MIN_WORK_SAMPLES
// Prints the counts; exits 1 on any mismatch.
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class RecordCheck {
    static String workOf(RecordedStackTrace st) {
        if (st == null) return null;
        for (RecordedFrame f : st.getFrames()) {
            String m = f.getMethod().getName();
            if (m.equals("work_A")) return "A";
            if (m.equals("work_B")) return "B";
        }
        return null;
    }

    static boolean has(RecordedStackTrace st, String name) {
        for (RecordedFrame f : st.getFrames())
            if (f.getMethod().getName().equals(name)) return true;
        return false;
    }

    static String label(RecordedEvent e, String key) {
        for (RecordedObject c = e.getValue("context"); c != null; c = c.getValue("next"))
            if (c.getString("key").equals(key)) return c.getString("value");
        return null;
    }

    public static void main(String[] a) throws Exception {
        long min = Long.parseLong(a[1]);
        long jdkSamples = 0, ctxSamples = 0, work = 0, bad = 0, wlFrames = 0;
        long mainWork = 0, withMain = 0, withCaller = 0;
        long badFrames = 0;
        Map<String, Long> threads = new HashMap<>();
        try (RecordingFile rf = new RecordingFile(Path.of(a[0]))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                String type = e.getEventType().getName();
                if (type.equals("jdk.ExecutionSample")) {
                    jdkSamples++;
                    RecordedThread t = e.getValue("sampledThread");
                    String name = t == null ? null : t.getJavaName();
                    if (name == null || name.isEmpty()) badFrames++;
                    else threads.merge(name, 1L, Long::sum);
                    RecordedStackTrace st = e.getStackTrace();
                    if (st != null) for (RecordedFrame f : st.getFrames()) {
                        String cls = f.getMethod().getType().getName();
                        String ft = f.getType();
                        if (!(ft.equals("Native") || ft.equals("C++") || ft.equals("Kernel")))
                            badFrames++;
                        if (cls.equals("wl_attrib")) wlFrames++;
                    }
                    if (e.getLong("contextId") == 0 && e.getLong("spanId") == 0) continue;
                    ctxSamples++;
                    String w = workOf(e.getStackTrace());
                    if (w == null) continue;
                    work++;
                    long span = e.getLong("spanId"), root = e.getLong("localRootSpanId");
                    String phase = label(e, "phase");
                    long wantSpan = w.equals("A") ? 0xA : 0xB;
                    if (!w.equals(phase) || span != wantSpan || root != wantSpan * 16) {
                        if (bad < 5)
                            System.out.println("mismatch: work_" + w + " phase=" + phase
                                    + " span=" + span + " root=" + root);
                        bad++;
                    }
                    // frame pointers: run_phases calls work_X on every thread, and the
                    // main thread (wl-0) reaches main
                    if (has(e.getStackTrace(), "run_phases")) withCaller++;
                    if (t != null && "wl-0".equals(t.getJavaName())) {
                        mainWork++;
                        if (has(e.getStackTrace(), "main")) withMain++;
                    }
                }
            }
        }
        System.out.printf("jdk.ExecutionSample %d, with context %d, work samples %d, "
                + "mismatches %d, with run_phases %d, main-thread work %d reaching main %d, "
                + "frames in wl_attrib %d, bad frames/threads %d, threads %s%n",
                jdkSamples, ctxSamples, work, bad, withCaller, mainWork, withMain, wlFrames,
                badFrames, threads);
        boolean ok = bad == 0 && work >= min && badFrames == 0 && wlFrames > 0
                && ctxSamples <= jdkSamples && threads.containsKey("wl-0")
                && withCaller * 10 >= work * 8 && mainWork > 0 && withMain * 10 >= mainWork * 8;
        System.out.println(ok ? "OK" : "FAILED");
        System.exit(ok ? 0 : 1);
    }
}

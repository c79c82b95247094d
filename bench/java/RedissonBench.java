/*
 * RedissonBench: the bench's workloads run by the real Redisson's RLock and
 * RFairLock, driven over stdin/stdout by the Go bench (bench/redisson.go).
 *
 * It is the bench's own program: it is compiled when the bench runs, against
 * the class path of a Redisson build named by REDISSON_PROBE (the interop
 * probe's run-probe.sh), and never built or committed with Redisson.
 *
 * Usage: java -cp <dir>:<redisson class path> RedissonBench redis://127.0.0.1:PORT [lockWatchdogTimeoutMs]
 *
 * One command a line, one JSON answer a line (the field names of the Go
 * bench's structs). <kind> is "lock" (getLock) or "fair" (getFairLock).
 * Times are wall-clock nanoseconds since the epoch (comparable with the Go
 * processes of the same machine), durations nanoseconds.
 *
 *   a <kind> <key> <pairs> <maxNs>        -> {"Lat":[ns,...],"Err":""}   one thread, lock+unlock pairs
 *   b <kind> <prefix> <workers> <warmNs> <durNs> -> {"Pairs":n,"Err":""}  workers threads on keys of their own
 *   c <kind> <key> <workers> <firstWorker> <holdNs> <thinkNs> <startNs> <endNs>
 *                                          -> {"Sections":[{"Worker":w,"Asked":t,"Got":t,"Released":t},...],"Errors":n,"Err":""}
 *   k <kind> <key> <requests> <loadNs> <startNs>
 *                                          -> {"Lat":[ns,...],"Loads":n,"Errors":n,"Err":""}
 *        cache breakdown: <requests> threads read <key> through an RBucket at
 *        <startNs>; on a miss they take the lock "<key>:rebuild", read again,
 *        and the one that still misses loads (sleeps <loadNs>, counts a load)
 *        and writes the value with a 10 min TTL; a request waits at most 30 s for the lock.
 *   hold <kind> <key> <timeoutMs> [retry]  -> {"Got":t,"Err":""} (Got 0: not within the timeout)
 *        takes the lock on a thread of its own and keeps it; with retry 1 (a waiter) it tries
 *        again after an exception or an early false, and Err is the first of those
 *   release <key>                          -> {"Called":t,"Released":t,"Err":""}  unlock of that hold, on its thread
 *   quit
 */

import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

public class RedissonBench {
    private static RedissonClient redisson;
    private static PrintStream out;
    /** Holds of "hold": the thread that took each lock, by key. */
    private static final Map<String, ExecutorService> holders = new ConcurrentHashMap<>();
    private static final Map<String, RLock> held = new ConcurrentHashMap<>();
    /** How long after a contention run's end a lock call may still wait (the Go bench's contendGrace). */
    private static final long GRACE_NS = 10_000_000_000L;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        if (args.length > 1) {
            config.setLockWatchdogTimeout(Long.parseLong(args[1]));
        }
        config.useSingleServer().setAddress(args[0]);
        redisson = Redisson.create(config);
        out.println("{\"Ready\":\"" + redisson.getId() + "\"}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.trim().split("\\s+");
            if (p[0].isEmpty()) {
                continue;
            }
            if (p[0].equals("quit")) {
                break;
            }
            String answer;
            try {
                answer = run(p);
            } catch (Throwable t) {
                answer = "{\"Err\":" + str(t.toString()) + "}";
            }
            out.println(answer);
        }
        for (ExecutorService e : holders.values()) {
            e.shutdownNow();
        }
        redisson.shutdown();
        System.exit(0);
    }

    private static String run(String[] p) throws Exception {
        switch (p[0]) {
            case "a":
                return pairs(p[1], p[2], Integer.parseInt(p[3]), Long.parseLong(p[4]));
            case "b":
                return ownKeys(p[1], p[2], Integer.parseInt(p[3]), Long.parseLong(p[4]), Long.parseLong(p[5]));
            case "c":
                return contend(p[1], p[2], Integer.parseInt(p[3]), Integer.parseInt(p[4]), Long.parseLong(p[5]),
                        Long.parseLong(p[6]), Long.parseLong(p[7]), Long.parseLong(p[8]));
            case "k":
                return breakdown(p[1], p[2], Integer.parseInt(p[3]), Long.parseLong(p[4]), Long.parseLong(p[5]));
            case "hold":
                return hold(p[1], p[2], Long.parseLong(p[3]), p.length > 4 && p[4].equals("1"));
            case "release":
                return release(p[1]);
            default:
                return "{\"Err\":" + str("unknown command " + p[0]) + "}";
        }
    }

    private static RLock lockOf(String kind, String key) {
        return kind.equals("fair") ? redisson.getFairLock(key) : redisson.getLock(key);
    }

    /** Wall clock in nanoseconds since the epoch (microsecond resolution on Linux). */
    private static long wall() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    private static void sleepUntil(long wallNs) {
        long d;
        while ((d = wallNs - wall()) > 0) {
            LockSupport.parkNanos(d);
        }
    }

    private static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String longs(List<Long> vs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < vs.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(vs.get(i));
        }
        return b.append(']').toString();
    }

    /** (a) lock+unlock pairs on one key from one thread: a tenth as warm-up, then up to n, or as many as fit in maxNs (at least 10). */
    private static String pairs(String kind, String key, int n, long maxNs) {
        RLock l = lockOf(kind, key);
        for (int i = 0; i < n / 10; i++) {
            l.lock();
            l.unlock();
        }
        List<Long> lat = new ArrayList<>(n);
        long began = System.nanoTime();
        for (int i = 0; i < n; i++) {
            if (maxNs > 0 && lat.size() >= 10 && System.nanoTime() - began >= maxNs) {
                break;
            }
            long t = System.nanoTime();
            l.lock();
            l.unlock();
            lat.add(System.nanoTime() - t);
        }
        return "{\"Lat\":" + longs(lat) + ",\"Err\":\"\"}";
    }

    /** (b) workers threads, each on a key of its own; pairs completed between warm-up end and the end. */
    private static String ownKeys(String kind, String prefix, int workers, long warmNs, long durNs) throws Exception {
        long start = wall() + warmNs, end = start + durNs;
        AtomicLong pairs = new AtomicLong();
        AtomicReference<String> err = new AtomicReference<>("");
        Thread[] ts = new Thread[workers];
        for (int g = 0; g < workers; g++) {
            final int id = g;
            ts[g] = new Thread(() -> {
                RLock l = lockOf(kind, prefix + ":" + id);
                try {
                    for (long now = wall(); now < end; now = wall()) {
                        l.lock();
                        l.unlock();
                        if (now >= start) {
                            pairs.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    err.compareAndSet("", t.toString());
                }
            });
            ts[g].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        return "{\"Pairs\":" + pairs.get() + ",\"Err\":" + str(err.get()) + "}";
    }

    /** (c) workers threads on one key: lock, hold, unlock, think, from startNs to endNs; every critical section. */
    private static String contend(String kind, String key, int workers, int first, long holdNs, long thinkNs,
                                  long startNs, long endNs) throws Exception {
        List<List<long[]>> results = new ArrayList<>();
        AtomicInteger errors = new AtomicInteger();
        AtomicReference<String> err = new AtomicReference<>("");
        Thread[] ts = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            List<long[]> mine = new ArrayList<>();
            results.add(mine);
            final int id = first + w;
            ts[w] = new Thread(() -> {
                RLock l = lockOf(kind, key);
                sleepUntil(startNs);
                while (wall() < endNs) {
                    long asked = wall();
                    try {
                        long wait = Math.max(0, endNs + GRACE_NS - asked);
                        if (!l.tryLock(wait, -1, TimeUnit.NANOSECONDS)) {
                            errors.incrementAndGet();
                            err.compareAndSet("", "lock call still waiting 10s after the run's end");
                            continue;
                        }
                    } catch (Throwable t) {
                        errors.incrementAndGet();
                        err.compareAndSet("", t.toString());
                        continue;
                    }
                    long got = wall();
                    LockSupport.parkNanos(holdNs);
                    try {
                        l.unlock();
                    } catch (Throwable t) {
                        errors.incrementAndGet();
                        err.compareAndSet("", t.toString());
                    }
                    mine.add(new long[]{id, asked, got, wall()});
                    if (thinkNs > 0) {
                        LockSupport.parkNanos(thinkNs);
                    }
                }
            });
            ts[w].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        StringBuilder b = new StringBuilder("{\"Sections\":[");
        boolean firstOne = true;
        for (List<long[]> r : results) {
            for (long[] s : r) {
                if (!firstOne) {
                    b.append(',');
                }
                firstOne = false;
                b.append("{\"Worker\":").append(s[0]).append(",\"Asked\":").append(s[1])
                        .append(",\"Got\":").append(s[2]).append(",\"Released\":").append(s[3]).append('}');
            }
        }
        return b.append("],\"Errors\":").append(errors.get()).append(",\"Err\":").append(str(err.get())).append('}').toString();
    }

    /** Cache breakdown with Redisson's lock as the rebuild lock. */
    private static String breakdown(String kind, String key, int requests, long loadNs, long startNs) throws Exception {
        AtomicLong loads = new AtomicLong();
        AtomicInteger errors = new AtomicInteger();
        AtomicReference<String> err = new AtomicReference<>("");
        long[] lat = new long[requests];
        CountDownLatch ready = new CountDownLatch(requests);
        Thread[] ts = new Thread[requests];
        for (int i = 0; i < requests; i++) {
            final int id = i;
            ts[i] = new Thread(() -> {
                RBucket<String> bucket = redisson.getBucket(key, StringCodec.INSTANCE);
                RLock l = lockOf(kind, key + ":rebuild");
                ready.countDown();
                sleepUntil(startNs);
                long t = System.nanoTime();
                try {
                    String v = bucket.get();
                    if (v == null) {
                        if (!l.tryLock(30, -1, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("rebuild lock not taken within 30 s (tryLock returned false)");
                        }
                        try {
                            v = bucket.get(); // the holder before us may have reloaded it
                            if (v == null) {
                                long n = loads.incrementAndGet();
                                LockSupport.parkNanos(loadNs);
                                bucket.set(key + "@v" + n, 600, TimeUnit.SECONDS);
                            }
                        } finally {
                            l.unlock();
                        }
                    }
                } catch (Throwable e) {
                    errors.incrementAndGet();
                    err.compareAndSet("", e.toString());
                }
                lat[id] = System.nanoTime() - t;
            });
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        List<Long> l = new ArrayList<>(requests);
        for (long v : lat) {
            l.add(v);
        }
        return "{\"Lat\":" + longs(l) + ",\"Loads\":" + loads.get() + ",\"Errors\":" + errors.get() + ",\"Err\":" + str(err.get()) + "}";
    }

    /**
     * Takes key's lock on a thread of its own (Redisson binds a hold to its thread) within timeoutMs and keeps it.
     * With retry (a waiter), an exception is followed by another try 100 ms later, as a caller that needs the lock
     * would; Err is the first exception seen, Got 0 means not got within the timeout.
     */
    private static String hold(String kind, String key, long timeoutMs, boolean retry) throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "hold-" + key);
            t.setDaemon(true);
            return t;
        });
        holders.put(key, ex);
        AtomicReference<String> first = new AtomicReference<>("");
        Future<Long> f = ex.submit(() -> {
            RLock l = lockOf(kind, key);
            long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
            while (true) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return 0L;
                }
                try {
                    long t0 = System.nanoTime();
                    if (l.tryLock(left, -1, TimeUnit.NANOSECONDS)) {
                        held.put(key, l);
                        return wall();
                    }
                    // tryLock also answers false, early, when its subscription failed
                    // (Redisson logs the exception): a waiter that needs the lock tries again.
                    long waited = System.nanoTime() - t0;
                    if (!retry || deadline - System.nanoTime() < 100_000_000L) {
                        return 0L;
                    }
                    first.compareAndSet("", "tryLock returned false after " + waited / 1_000_000 + " ms of its " + left / 1_000_000 + " ms wait");
                    LockSupport.parkNanos(100_000_000L);
                } catch (Throwable t) {
                    first.compareAndSet("", t.toString());
                    if (!retry) {
                        return 0L;
                    }
                    LockSupport.parkNanos(100_000_000L);
                }
            }
        });
        long got = f.get();
        return "{\"Got\":" + got + ",\"Err\":" + str(first.get()) + "}";
    }

    private static String release(String key) throws Exception {
        ExecutorService ex = holders.get(key);
        RLock l = held.remove(key);
        if (ex == null || l == null) {
            return "{\"Err\":" + str("no hold of " + key) + "}";
        }
        long called = wall();
        Future<String> f = ex.submit(() -> {
            try {
                l.unlock();
                return "";
            } catch (Throwable t) {
                return t.toString();
            }
        });
        String e = f.get();
        return "{\"Called\":" + called + ",\"Released\":" + wall() + ",\"Err\":" + str(e) + "}";
    }
}

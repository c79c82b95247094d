/*
 * GroupProbe: goredisson's own driver for Redisson's RedissonMultiLock,
 * RedissonRedLock and RedissonNonReentrantLock (and a plain RLock), through
 * Redisson's public API only. The interop suite compiles it at test time
 * against the class path of the Redisson probe (shared/tools/redisson-probe)
 * and runs it as
 *
 *   java -cp <tmp>:<probe class path> GroupProbe redis://127.0.0.1:<port> [version]
 *
 * Line protocol, as SyncProbe's: one command per line on stdin. A line
 * "@<tag> <command>" runs asynchronously and its answer comes back as
 * "@<tag> <answer>" (in completion order); an untagged command is answered
 * before the next line is read. Every lock command names a <tid> and runs on
 * that tid's own thread, in order, so Redisson's thread-owned holds work and
 * a blocked lock() of one tid does not stop the others. The first line
 * printed is "ready <client id>".
 *
 * <kind> is multi (redisson.getMultiLock over the names), red (new
 * RedissonRedLock over the names), nr (getNonReentrantLock) or plain
 * (getLock); <names> is one name, or several joined by commas, taken in the
 * given order. A lease of -1 asks for the watchdog.
 *
 *   <kind> lock <names> <tid> [leaseMs]            -> ok
 *   <kind> trylock <names> <tid> <waitMs> <leaseMs> -> ok | false
 *   <kind> unlock <names> <tid>                    -> ok
 *   <kind> held <names> <tid>                      -> true | false   (isHeldByCurrentThread)
 *   jtid <tid>                                     -> the tid's Java thread id
 *   id | version | quit
 *
 * Errors: "err <exception class>: <message>", followed by " <- <class>: <message>"
 * for each cause.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public class GroupProbe {
    private static RedissonClient client;
    private static String version = "unknown";
    private static PrintStream out;
    private static final Map<String, ExecutorService> tids = new ConcurrentHashMap<>();
    private static final ExecutorService pool = Executors.newCachedThreadPool(r -> daemon(r, "group-probe"));

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        if (args.length > 1) {
            version = args[1];
        }
        Config config = new Config();
        config.useSingleServer().setAddress(args.length > 0 ? args[0] : "redis://127.0.0.1:6379");
        client = Redisson.create(config);
        answer(null, "ready " + client.getId());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String tag = null;
            if (line.startsWith("@")) {
                int sp = line.indexOf(' ');
                if (sp < 0) {
                    continue;
                }
                tag = line.substring(0, sp);
                line = line.substring(sp + 1).trim();
            }
            String[] p = line.split("\\s+");
            if (p[0].equals("quit")) {
                break;
            }
            if (tag == null) {
                answer(null, run(p));
                continue;
            }
            String t = tag;
            ExecutorService ex = threadOf(p);
            (ex == null ? pool : ex).execute(() -> answer(t, run(p)));
        }
        client.shutdown(0, 2, TimeUnit.SECONDS);
        System.exit(0);
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** The thread of a command's tid: the second word of jtid, the fourth of a lock command. */
    private static ExecutorService threadOf(String[] p) {
        String tid = null;
        if (p[0].equals("jtid") && p.length > 1) {
            tid = p[1];
        } else if (p.length > 3) {
            tid = p[3];
        }
        if (tid == null) {
            return null;
        }
        return tids.computeIfAbsent(tid, k -> Executors.newSingleThreadExecutor(r -> daemon(r, "tid-" + k)));
    }

    private static synchronized void answer(String tag, String text) {
        out.println(tag == null ? text : tag + " " + text);
        out.flush();
    }

    private static String run(String[] p) {
        try {
            return exec(p);
        } catch (Throwable e) {
            Throwable c = e;
            while ((c instanceof CompletionException || c instanceof ExecutionException) && c.getCause() != null) {
                c = c.getCause();
            }
            StringBuilder b = new StringBuilder("err ");
            for (int depth = 0; c != null && depth < 5; c = c.getCause(), depth++) {
                if (depth > 0) {
                    b.append(" <- ");
                }
                b.append(c.getClass().getSimpleName()).append(": ").append(String.valueOf(c.getMessage()).replace('\n', ' '));
            }
            return b.toString();
        }
    }

    private static long ms(String[] p, int i, long def) {
        return p.length > i ? Long.parseLong(p[i]) : def;
    }

    /** The lock a command names, a new object for every command. */
    private static RLock lockOf(String kind, String names) {
        String[] n = names.split(",");
        RLock[] locks = new RLock[n.length];
        for (int i = 0; i < n.length; i++) {
            locks[i] = client.getLock(n[i]);
        }
        switch (kind) {
            case "multi":
                return client.getMultiLock(locks);
            case "red":
                return new RedissonRedLock(locks);
            case "nr":
                return client.getNonReentrantLock(names);
            case "plain":
                return client.getLock(names);
        }
        throw new IllegalArgumentException("unknown lock kind " + kind);
    }

    private static String exec(String[] p) throws Exception {
        switch (p[0]) {
            case "id":
                return client.getId();
            case "version":
                return version;
            case "jtid":
                return String.valueOf(Thread.currentThread().getId());
        }
        if (p.length < 4) {
            return "err usage: <kind> <verb> <names> <tid> ...";
        }
        RLock l = lockOf(p[0], p[2]);
        switch (p[1]) {
            case "lock": {
                long lease = ms(p, 4, -1);
                if (lease > 0) {
                    l.lock(lease, TimeUnit.MILLISECONDS);
                } else {
                    l.lock();
                }
                return "ok";
            }
            case "trylock":
                return l.tryLock(ms(p, 4, 0), ms(p, 5, -1), TimeUnit.MILLISECONDS) ? "ok" : "false";
            case "unlock":
                l.unlock();
                return "ok";
            case "held":
                return String.valueOf(l.isHeldByCurrentThread());
        }
        return "err unknown command " + p[0] + " " + p[1];
    }
}

/*
 * SyncProbe: goredisson's own driver for Redisson's synchronizers (RSemaphore,
 * RPermitExpirableSemaphore, RCountDownLatch), through Redisson's public API
 * only. The interop suite compiles it at test time against the class path of
 * the Redisson probe (shared/tools/redisson-probe) and runs it as
 *
 *   java -cp <tmp>:<probe class path> SyncProbe redis://127.0.0.1:<port> [version]
 *
 * Line protocol, as the lock probe's: one command per line on stdin. A line
 * "@<tag> <command>" runs asynchronously and its answer comes back as
 * "@<tag> <answer>" (in completion order); an untagged command is answered
 * before the next line is read. A command with a <tid> runs on that tid's own
 * thread, in order, so a blocked acquire of one tid does not stop the others.
 * The first line printed is "ready <client id>".
 *
 *   sem.trysetpermits <name> <n>                   -> true | false
 *   sem.addpermits <name> <n>                      -> ok
 *   sem.acquire <name> <tid> <n>                   -> ok
 *   sem.tryacquire <name> <tid> <n> <waitMs>       -> true | false
 *   sem.release <name> <n>                         -> ok
 *   sem.available <name>                           -> N
 *   sem.drain <name>                               -> N
 *   psem.trysetpermits <name> <n>                  -> true | false
 *   psem.acquire <name> <tid> <leaseMs>            -> id <hex>   (leaseMs -1: never expires)
 *   psem.tryacquire <name> <tid> <waitMs> <leaseMs> -> id <hex> | false
 *   psem.release <name> <id>                       -> ok | err <exception>: <message>
 *   psem.available <name>                          -> N
 *   latch.trysetcount <name> <n>                   -> true | false
 *   latch.countdown <name>                         -> ok
 *   latch.count <name>                             -> N
 *   latch.await <name> <tid> [waitMs]              -> ok | true | false
 *   id | version | sleep <ms> | quit
 *
 * Errors: "err <exception class>: <message>", followed by " <- <class>: <message>"
 * for each cause (Redisson wraps an IllegalArgumentException of a release in a
 * RedisException).
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class SyncProbe {
    private static RedissonClient client;
    private static String version = "unknown";
    private static PrintStream out;
    private static final Map<String, ExecutorService> tids = new ConcurrentHashMap<>();
    private static final ExecutorService pool = Executors.newCachedThreadPool(r -> daemon(r, "sync-probe"));

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        if (args.length > 1) {
            version = args[1];
        }
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
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
            ExecutorService ex = tidOf(p);
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

    /** The thread of a command that names a tid (its third word), else null. */
    private static ExecutorService tidOf(String[] p) {
        boolean hasTid = p[0].equals("sem.acquire") || p[0].equals("sem.tryacquire")
                || p[0].equals("psem.acquire") || p[0].equals("psem.tryacquire") || p[0].equals("latch.await");
        if (!hasTid || p.length < 3) {
            return null;
        }
        return tids.computeIfAbsent(p[2], k -> Executors.newSingleThreadExecutor(r -> daemon(r, "tid-" + k)));
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

    private static int num(String[] p, int i) {
        return Integer.parseInt(p[i]);
    }

    private static long ms(String[] p, int i) {
        return Long.parseLong(p[i]);
    }

    private static String exec(String[] p) throws Exception {
        switch (p[0]) {
            case "id":
                return client.getId();
            case "version":
                return version;
            case "sleep":
                Thread.sleep(ms(p, 1));
                return "ok";
        }
        String kind = p[0].substring(0, Math.max(0, p[0].indexOf('.')));
        switch (kind) {
            case "sem":
                return semaphore(p, client.getSemaphore(p[1]));
            case "psem":
                return permits(p, client.getPermitExpirableSemaphore(p[1]));
            case "latch":
                return latch(p, client.getCountDownLatch(p[1]));
        }
        return "err unknown command " + p[0];
    }

    private static String semaphore(String[] p, RSemaphore s) throws Exception {
        switch (p[0]) {
            case "sem.trysetpermits":
                return String.valueOf(s.trySetPermits(num(p, 2)));
            case "sem.addpermits":
                s.addPermits(num(p, 2));
                return "ok";
            case "sem.acquire":
                s.acquire(num(p, 3));
                return "ok";
            case "sem.tryacquire":
                return String.valueOf(s.tryAcquire(num(p, 3), Duration.ofMillis(ms(p, 4))));
            case "sem.release":
                s.release(num(p, 2));
                return "ok";
            case "sem.available":
                return String.valueOf(s.availablePermits());
            case "sem.drain":
                return String.valueOf(s.drainPermits());
        }
        return "err unknown command " + p[0];
    }

    private static String permits(String[] p, RPermitExpirableSemaphore s) throws Exception {
        switch (p[0]) {
            case "psem.trysetpermits":
                return String.valueOf(s.trySetPermits(num(p, 2)));
            case "psem.acquire":
                return "id " + s.acquire(ms(p, 3), TimeUnit.MILLISECONDS);
            case "psem.tryacquire": {
                String id = s.tryAcquire(ms(p, 3), ms(p, 4), TimeUnit.MILLISECONDS);
                return id == null ? "false" : "id " + id;
            }
            case "psem.release":
                s.release(p[2]);
                return "ok";
            case "psem.available":
                return String.valueOf(s.availablePermits());
        }
        return "err unknown command " + p[0];
    }

    private static String latch(String[] p, RCountDownLatch l) throws Exception {
        switch (p[0]) {
            case "latch.trysetcount":
                return String.valueOf(l.trySetCount(ms(p, 2)));
            case "latch.countdown":
                l.countDown();
                return "ok";
            case "latch.count":
                return String.valueOf(l.getCount());
            case "latch.await":
                if (p.length > 3) {
                    return String.valueOf(l.await(ms(p, 3), TimeUnit.MILLISECONDS));
                }
                l.await();
                return "ok";
        }
        return "err unknown command " + p[0];
    }
}

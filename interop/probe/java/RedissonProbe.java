/*
 * RedissonProbe: the Java side of goredisson's proof kit (Go package
 * github.com/goredisson/goredisson/interop/probe). It is shipped as source:
 * the kit compiles it with javac against the class path a porter gives (their
 * own Redisson jar and its dependencies), so it uses only Redisson's public
 * API, and reflection for what some releases lack (fenced and non-reentrant
 * locks, getPermits/setPermits/acquiredPermits/getLeaseTime, the NameMapper's
 * package, the sharded subscription mode). It compiles against Redisson 3.18
 * and later.
 *
 *   java -cp <classes>:<class path> RedissonProbe --addr host:port[,host:port...]
 *        [--cluster] [--prefix P] [--watchdog ms] [--sharded auto|on|off]
 *
 * It connects a RedissonClient (StringCodec), prints "ready <client id>
 * <version>", then reads one request per line on stdin and answers each on
 * stdout, in completion order:
 *
 *   request: <seq> <thread> <verb> <arg>...
 *   answer:  <seq> ok [<value>...]   or   <seq> err <Class>: <message>[ <- <Class>: <message>]...
 *
 * <thread> names an owner: every request naming it runs on that owner's own
 * Java thread, in order (Redisson binds lock holds to the thread); "-" runs
 * the request on a pool thread. Words are percent-encoded by the Go side
 * (%20 for a space, %2C for a comma, %25 for %), so a name may hold any
 * character; a group of names is joined with commas.
 *
 * Lock verbs; <kind> is lock, fair, read, write (the two sides of
 * getReadWriteLock), spin, fenced, multi (getMultiLock over getLock of each
 * name), red (RedissonRedLock over getLock of each name), nonreentrant,
 * nonreentrantfair; a lease of -1 asks for the watchdog:
 *
 *   lock <kind> <names> <leaseMs>            -> ok            (lockInterruptibly)
 *   locktoken <names> <leaseMs>              -> ok <token>    (fenced lockAndGetToken)
 *   trylock <kind> <names> <waitMs> <leaseMs> -> ok true|false
 *   trylocktoken <names> <waitMs> <leaseMs>  -> ok <token>|false
 *   unlock <kind> <names>                    -> ok
 *   forceunlock <kind> <names>               -> ok true|false
 *   islocked | held | holdcount | remain <kind> <names> -> ok <value>
 *   token <names>                            -> ok <token>    (fenced getToken)
 *
 * Synchronizers (a lease of -1: the permit never expires):
 *
 *   sem.trysetpermits <name> <n> | sem.addpermits <name> <n> | sem.release <name> <n>
 *   sem.acquire <name> <n> | sem.tryacquire <name> <n> <waitMs>
 *   sem.available <name> | sem.drain <name>
 *   psem.trysetpermits | psem.setpermits | psem.addpermits <name> <n>
 *   psem.available | psem.permits | psem.acquired <name>
 *   psem.acquire <name> <leaseMs>            -> ok <id>
 *   psem.tryacquire <name> <waitMs> <leaseMs> -> ok <id>|false
 *   psem.release <name> <id> | psem.tryrelease <name> <id>
 *   psem.updatelease <name> <id> <leaseMs> | psem.leasetime <name> <id>
 *   latch.trysetcount <name> <n> | latch.countdown <name> | latch.count <name>
 *   latch.await <name> | latch.tryawait <name> <waitMs>
 *
 * Control (thread "-"): cancel <seq> (stops a request: it never starts if it
 * waits behind another, its thread is interrupted if it runs; no answer
 * comes for it), state <thread> (ok <busy> <Thread.State>), jtid <thread>
 * (ok <Java thread id>), id, version, quit.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.Manifest;

import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public final class RedissonProbe {
    /** A release lacks a method or type the request needs. */
    static final class Unsupported extends RuntimeException {
        Unsupported(String what) {
            super(what + " is not in this Redisson release");
        }
    }

    /** The Java thread of one owner, and whether it runs a request. */
    static final class Owner {
        final ExecutorService exec;
        volatile Thread thread;
        volatile boolean busy;

        Owner(String name) {
            exec = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "owner-" + name);
                t.setDaemon(true);
                thread = t;
                return t;
            });
        }
    }

    private final RedissonClient client;
    private final String version;
    private final PrintStream out;
    private final Map<String, Owner> owners = new ConcurrentHashMap<>();
    private final Map<String, Future<?>> running = new ConcurrentHashMap<>();
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "probe-pool");
        t.setDaemon(true);
        return t;
    });

    private RedissonProbe(RedissonClient client, String version, PrintStream out) {
        this.client = client;
        this.version = version;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String addr = null, prefix = null, sharded = null;
        long watchdog = 0;
        boolean cluster = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--addr": addr = args[++i]; break;
                case "--cluster": cluster = true; break;
                case "--prefix": prefix = decode(args[++i]); break;
                case "--watchdog": watchdog = Long.parseLong(args[++i]); break;
                case "--sharded": sharded = args[++i]; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (addr == null) {
            throw new IllegalArgumentException("--addr is required");
        }
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        if (watchdog > 0) {
            config.setLockWatchdogTimeout(watchdog);
        }
        String[] nodes = addr.split(",");
        for (int i = 0; i < nodes.length; i++) {
            if (!nodes[i].contains("://")) {
                nodes[i] = "redis://" + nodes[i];
            }
        }
        Object servers;
        if (cluster || nodes.length > 1) {
            servers = config.useClusterServers().addNodeAddress(nodes);
            if (sharded != null && !sharded.isEmpty()) {
                setShardedMode(servers, sharded);
            }
        } else {
            if (sharded != null && !sharded.isEmpty()) {
                throw new IllegalArgumentException("--sharded is a Cluster setting");
            }
            servers = config.useSingleServer().setAddress(nodes[0]);
        }
        if (prefix != null && !prefix.isEmpty()) {
            setNameMapper(servers, prefix);
        }
        RedissonClient client = Redisson.create(config);
        new RedissonProbe(client, releaseVersion(), out).serve();
    }

    /** The Redisson release on the class path, from its jar's manifest. */
    private static String releaseVersion() {
        try {
            Enumeration<URL> urls = Redisson.class.getClassLoader().getResources("META-INF/MANIFEST.MF");
            while (urls.hasMoreElements()) {
                try (InputStream in = urls.nextElement().openStream()) {
                    Attributes a = new Manifest(in).getMainAttributes();
                    if (a != null && "Redisson".equals(a.getValue("Bundle-Name")) && a.getValue("Bundle-Version") != null) {
                        return a.getValue("Bundle-Version");
                    }
                }
            }
        } catch (Exception e) {
            // fall through
        }
        Package p = Redisson.class.getPackage();
        if (p != null && p.getImplementationVersion() != null) {
            return p.getImplementationVersion();
        }
        return "unknown";
    }

    /** ClusterServersConfig.setShardedSubscriptionMode (Redisson 3.29 on). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void setShardedMode(Object servers, String mode) throws Exception {
        Class enumType;
        try {
            enumType = Class.forName("org.redisson.config.ShardedSubscriptionMode");
        } catch (ClassNotFoundException e) {
            throw new Unsupported("ShardedSubscriptionMode (Redisson 3.29 and later)");
        }
        Object value = Enum.valueOf(enumType, mode.toUpperCase());
        servers.getClass().getMethod("setShardedSubscriptionMode", enumType).invoke(servers, value);
    }

    /**
     * Sets a NameMapper map(n) = prefix + n, unmap stripping it: the
     * interface is org.redisson.api's before 4.0, org.redisson.config's after.
     */
    private static void setNameMapper(Object servers, String prefix) throws Exception {
        Class<?> iface;
        try {
            iface = Class.forName("org.redisson.config.NameMapper");
        } catch (ClassNotFoundException e) {
            iface = Class.forName("org.redisson.api.NameMapper");
        }
        Object mapper = Proxy.newProxyInstance(RedissonProbe.class.getClassLoader(), new Class<?>[]{iface}, (proxy, m, a) -> {
            switch (m.getName()) {
                case "map":
                    return prefix + a[0];
                case "unmap":
                    String n = (String) a[0];
                    return n.startsWith(prefix) ? n.substring(prefix.length()) : n;
                case "equals":
                    return proxy == a[0];
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "toString":
                    return "prefix name mapper " + prefix;
                default:
                    throw new UnsupportedOperationException(m.getName());
            }
        });
        servers.getClass().getMethod("setNameMapper", iface).invoke(servers, mapper);
    }

    private void serve() throws Exception {
        answer("ready " + client.getId() + " " + version);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            if (w.length < 3) {
                continue;
            }
            for (int i = 1; i < w.length; i++) {
                w[i] = decode(w[i]);
            }
            String seq = w[0], thread = w[1], verb = w[2];
            if (verb.equals("quit")) {
                answer(seq + " ok");
                break;
            }
            if (verb.equals("cancel")) {
                Future<?> f = running.remove(w[3]);
                if (f != null) {
                    f.cancel(true);
                }
                answer(seq + " ok " + (f != null));
                continue;
            }
            if (verb.equals("state") || verb.equals("jtid")) {
                // answered at once, also while the owner's thread is blocked
                answer(seq + " " + run(() -> ownerInfo(verb, w[3])));
                continue;
            }
            ExecutorService exec = thread.equals("-") ? pool : owner(thread).exec;
            Owner o = thread.equals("-") ? null : owner(thread);
            String[] args = new String[w.length - 3];
            System.arraycopy(w, 3, args, 0, args.length);
            FutureTask<Void> task = new FutureTask<>(() -> {
                Thread.interrupted(); // an interrupt meant for a request that had just ended
                if (o != null) {
                    o.busy = true;
                }
                try {
                    String res = run(() -> exec(verb, args));
                    if (running.remove(seq) != null) {
                        answer(seq + " " + res);
                    }
                } finally {
                    if (o != null) {
                        o.busy = false;
                    }
                    Thread.interrupted(); // a late cancel must not reach the next request
                }
            }, null);
            running.put(seq, task); // before it can run: its answer looks it up
            exec.execute(task);
        }
        client.shutdown(0, 2, TimeUnit.SECONDS);
        System.exit(0);
    }

    private Owner owner(String name) {
        return owners.computeIfAbsent(name, Owner::new);
    }

    private String ownerInfo(String verb, String name) throws Exception {
        Owner o = owner(name);
        if (o.thread == null) {
            o.exec.submit(() -> { }).get(); // starts the thread
        }
        if (verb.equals("jtid")) {
            return "ok " + o.thread.getId();
        }
        return "ok " + o.busy + " " + o.thread.getState();
    }

    private synchronized void answer(String s) {
        out.println(s);
        out.flush();
    }

    interface Body {
        String call() throws Exception;
    }

    /** Runs body and words its result or its exception as an answer. */
    private static String run(Body body) {
        try {
            return body.call();
        } catch (Throwable e) {
            Throwable c = e;
            while ((c instanceof CompletionException || c instanceof ExecutionException
                    || c instanceof InvocationTargetException) && c.getCause() != null) {
                c = c.getCause();
            }
            StringBuilder b = new StringBuilder("err ");
            for (int depth = 0; c != null && depth < 5; c = c.getCause(), depth++) {
                if (depth > 0) {
                    b.append(" <- ");
                }
                String name = c instanceof Unsupported ? "Unsupported" : c.getClass().getSimpleName();
                b.append(name).append(": ").append(String.valueOf(c.getMessage()).replace('\n', ' ').replace('\r', ' '));
            }
            return b.toString();
        }
    }

    private static String decode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        byte[] out = new byte[s.length()];
        int n = 0;
        byte[] in = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '%' && i + 2 < in.length) {
                out[n++] = (byte) Integer.parseInt(new String(in, i + 1, 2, StandardCharsets.US_ASCII), 16);
                i += 2;
            } else {
                out[n++] = in[i];
            }
        }
        return new String(out, 0, n, StandardCharsets.UTF_8);
    }

    /** Calls a public method by name and argument count (for what a release may lack). */
    private static Object invoke(Object target, String method, Object... args) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(method) && m.getParameterCount() == args.length) {
                Class<?>[] types = m.getParameterTypes();
                boolean fits = true;
                for (int i = 0; i < args.length; i++) {
                    if (args[i] instanceof TimeUnit && types[i] != TimeUnit.class) {
                        fits = false;
                    }
                    if (args[i] instanceof String && types[i] != String.class && types[i] != Object.class) {
                        fits = false;
                    }
                }
                if (fits) {
                    try {
                        m.setAccessible(true);
                        return m.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        Throwable c = e.getCause();
                        if (c instanceof Exception) {
                            throw (Exception) c;
                        }
                        throw e;
                    }
                }
            }
        }
        throw new Unsupported(target.getClass().getSimpleName() + "." + method);
    }

    private static long num(String[] a, int i) {
        return Long.parseLong(a[i]);
    }

    private RLock lockOf(String kind, String names) throws Exception {
        String[] n = names.split(",");
        switch (kind) {
            case "lock": return client.getLock(names);
            case "fair": return client.getFairLock(names);
            case "read": return client.getReadWriteLock(names).readLock();
            case "write": return client.getReadWriteLock(names).writeLock();
            case "spin": return client.getSpinLock(names);
            case "fenced": return (RLock) invoke(client, "getFencedLock", names);
            case "nonreentrant": return (RLock) invoke(client, "getNonReentrantLock", names);
            case "nonreentrantfair": return (RLock) invoke(client, "getNonReentrantFairLock", names);
            case "multi":
            case "red": {
                List<RLock> locks = new ArrayList<>();
                for (String s : n) {
                    locks.add(client.getLock(s));
                }
                RLock[] arr = locks.toArray(new RLock[0]);
                return kind.equals("multi") ? client.getMultiLock(arr) : new RedissonRedLock(arr);
            }
            default:
                throw new IllegalArgumentException("unknown lock kind " + kind);
        }
    }

    private String exec(String verb, String[] a) throws Exception {
        switch (verb) {
            case "id": return "ok " + client.getId();
            case "version": return "ok " + version;
            case "sleep": Thread.sleep(num(a, 0)); return "ok";
        }
        int dot = verb.indexOf('.');
        if (dot > 0) {
            String family = verb.substring(0, dot);
            switch (family) {
                case "sem": return semaphore(verb.substring(dot + 1), client.getSemaphore(a[0]), a);
                case "psem": return permits(verb.substring(dot + 1), client.getPermitExpirableSemaphore(a[0]), a);
                case "latch": return latch(verb.substring(dot + 1), client.getCountDownLatch(a[0]), a);
            }
            throw new IllegalArgumentException("unknown verb " + verb);
        }
        switch (verb) {
            case "locktoken": {
                Object f = lockOf("fenced", a[0]);
                long lease = num(a, 1);
                Object t = lease > 0 ? invoke(f, "lockAndGetToken", lease, TimeUnit.MILLISECONDS) : invoke(f, "lockAndGetToken");
                return "ok " + t;
            }
            case "trylocktoken": {
                Object f = lockOf("fenced", a[0]);
                Object t = invoke(f, "tryLockAndGetToken", num(a, 1), num(a, 2), TimeUnit.MILLISECONDS);
                return t == null ? "ok false" : "ok " + t;
            }
            case "token":
                return "ok " + invoke(lockOf("fenced", a[0]), "getToken");
        }
        RLock l = lockOf(a[0], a[1]);
        switch (verb) {
            case "lock":
                l.lockInterruptibly(num(a, 2), TimeUnit.MILLISECONDS);
                return "ok";
            case "trylock":
                return "ok " + l.tryLock(num(a, 2), num(a, 3), TimeUnit.MILLISECONDS);
            case "unlock":
                l.unlock();
                return "ok";
            case "forceunlock": return "ok " + l.forceUnlock();
            case "islocked": return "ok " + l.isLocked();
            case "held": return "ok " + l.isHeldByCurrentThread();
            case "holdcount": return "ok " + l.getHoldCount();
            case "remain": return "ok " + l.remainTimeToLive();
        }
        throw new IllegalArgumentException("unknown verb " + verb);
    }

    private static String semaphore(String verb, RSemaphore s, String[] a) throws Exception {
        switch (verb) {
            case "trysetpermits": return "ok " + s.trySetPermits((int) num(a, 1));
            case "addpermits": s.addPermits((int) num(a, 1)); return "ok";
            case "release": s.release((int) num(a, 1)); return "ok";
            case "acquire": s.acquire((int) num(a, 1)); return "ok";
            case "tryacquire": return "ok " + s.tryAcquire((int) num(a, 1), num(a, 2), TimeUnit.MILLISECONDS);
            case "available": return "ok " + s.availablePermits();
            case "drain": return "ok " + s.drainPermits();
        }
        throw new IllegalArgumentException("unknown verb sem." + verb);
    }

    private static String permits(String verb, RPermitExpirableSemaphore s, String[] a) throws Exception {
        switch (verb) {
            case "trysetpermits": return "ok " + s.trySetPermits((int) num(a, 1));
            case "setpermits": invoke(s, "setPermits", (int) num(a, 1)); return "ok";
            case "addpermits": s.addPermits((int) num(a, 1)); return "ok";
            case "available": return "ok " + s.availablePermits();
            case "permits": return "ok " + invoke(s, "getPermits");
            case "acquired": return "ok " + invoke(s, "acquiredPermits");
            case "acquire": return "ok " + s.acquire(num(a, 1), TimeUnit.MILLISECONDS);
            case "tryacquire": {
                String id = s.tryAcquire(num(a, 1), num(a, 2), TimeUnit.MILLISECONDS);
                return id == null ? "ok false" : "ok " + id;
            }
            case "release": s.release(a[1]); return "ok";
            case "tryrelease": return "ok " + s.tryRelease(a[1]);
            case "updatelease": return "ok " + s.updateLeaseTime(a[1], num(a, 2), TimeUnit.MILLISECONDS);
            case "leasetime": return "ok " + invoke(s, "getLeaseTime", a[1]);
        }
        throw new IllegalArgumentException("unknown verb psem." + verb);
    }

    private static String latch(String verb, RCountDownLatch l, String[] a) throws Exception {
        switch (verb) {
            case "trysetcount": return "ok " + l.trySetCount(num(a, 1));
            case "countdown": l.countDown(); return "ok";
            case "count": return "ok " + l.getCount();
            case "await": l.await(); return "ok";
            case "tryawait": return "ok " + l.await(num(a, 1), TimeUnit.MILLISECONDS);
        }
        throw new IllegalArgumentException("unknown verb latch." + verb);
    }
}

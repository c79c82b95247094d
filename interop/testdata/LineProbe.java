/*
 * LineProbe: the line protocol that SyncProbe and GroupProbe (goredisson's own
 * drivers of Redisson's public API) share; the interop suite compiles it with
 * each of them. It connects a RedissonClient to the address in args[0]
 * (args[1], if given, is the version "version" answers), prints
 * "ready <client id>", then reads one command per line from stdin.
 *
 * A line "@<tag> <command>" runs asynchronously and its answer comes back as
 * "@<tag> <answer>" (in completion order); an untagged command is answered
 * before the next line is read. A command for which the probe names a tid
 * runs on that tid's own thread, in order, so that Redisson's thread-owned
 * holds work and a blocked call of one tid does not stop the others. "id"
 * answers the client's id, "version" the version, "quit" ends the probe;
 * every other command goes to the probe's own handler.
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
import java.util.function.Consumer;
import java.util.function.Function;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

final class LineProbe {
    /** A probe's commands: the answer to one command line, split into words. */
    interface Handler {
        String exec(RedissonClient client, String[] p) throws Exception;
    }

    private final RedissonClient client;
    private final String version;
    private final Handler handler;
    private final Function<String[], String> tidOf;
    private final PrintStream out;
    private final Map<String, ExecutorService> tids = new ConcurrentHashMap<>();
    private final ExecutorService pool;

    private LineProbe(String[] args, String name, Consumer<Config> configure, Handler handler,
            Function<String[], String> tidOf) throws Exception {
        this.out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        this.version = args.length > 1 ? args[1] : "unknown";
        this.handler = handler;
        this.tidOf = tidOf;
        this.pool = Executors.newCachedThreadPool(r -> daemon(r, name));
        Config config = new Config();
        configure.accept(config);
        String addr = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        Object servers;
        if (addr.contains(",")) {
            // a comma-separated node list: a Redis Cluster, with Redisson's
            // cluster defaults (sharded pub/sub AUTO), as the lock probe
            servers = config.useClusterServers().addNodeAddress(addr.split(","));
        } else {
            servers = config.useSingleServer().setAddress(addr);
        }
        String prefix = System.getenv("PROBE_NAME_PREFIX");
        if (prefix != null && !prefix.isEmpty()) {
            setNameMapper(servers, prefix);
        }
        this.client = Redisson.create(config);
    }

    /**
     * Sets Redisson's NameMapper map(n) = prefix + n (unmap strips it) on a
     * server config, by reflection: NameMapper is org.redisson.api's before
     * 4.0 and org.redisson.config's from 4.0 on.
     */
    private static void setNameMapper(Object servers, String prefix) throws Exception {
        Class<?> iface;
        try {
            iface = Class.forName("org.redisson.config.NameMapper");
        } catch (ClassNotFoundException e) {
            iface = Class.forName("org.redisson.api.NameMapper");
        }
        Object mapper = java.lang.reflect.Proxy.newProxyInstance(LineProbe.class.getClassLoader(), new Class<?>[]{iface}, (proxy, m, a) -> {
            switch (m.getName()) {
                case "map":
                    return prefix + a[0];
                case "unmap": {
                    String n = (String) a[0];
                    return n.startsWith(prefix) ? n.substring(prefix.length()) : n;
                }
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == a[0];
                case "toString":
                    return "prefix mapper " + prefix;
            }
            throw new UnsupportedOperationException(m.getName());
        });
        for (java.lang.reflect.Method m : servers.getClass().getMethods()) {
            if (m.getName().equals("setNameMapper") && m.getParameterCount() == 1) {
                m.invoke(servers, mapper);
                return;
            }
        }
        throw new IllegalStateException("no setNameMapper on " + servers.getClass());
    }

    /**
     * Runs a probe until stdin ends or "quit": name names its threads,
     * configure adjusts the Redisson config before the address is set, and
     * tidOf returns the tid a command runs on (null: any thread).
     */
    static void serve(String[] args, String name, Consumer<Config> configure, Handler handler,
            Function<String[], String> tidOf) throws Exception {
        new LineProbe(args, name, configure, handler, tidOf).loop();
    }

    private void loop() throws Exception {
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
            threadOf(p).execute(() -> answer(t, run(p)));
        }
        client.shutdown(0, 2, TimeUnit.SECONDS);
        System.exit(0);
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** The thread a command runs on: its tid's own, or the shared pool. */
    private ExecutorService threadOf(String[] p) {
        String tid = tidOf.apply(p);
        if (tid == null) {
            return pool;
        }
        return tids.computeIfAbsent(tid, k -> Executors.newSingleThreadExecutor(r -> daemon(r, "tid-" + k)));
    }

    private synchronized void answer(String tag, String text) {
        out.println(tag == null ? text : tag + " " + text);
        out.flush();
    }

    private String run(String[] p) {
        try {
            switch (p[0]) {
                case "id":
                    return client.getId();
                case "version":
                    return version;
            }
            return handler.exec(client, p);
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
}

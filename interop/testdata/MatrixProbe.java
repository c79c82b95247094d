/*
 * MatrixProbe: goredisson's own driver of every Redisson lock type and
 * synchronizer the interop matrix (interop/matrix_spec_test.go) checks,
 * through Redisson's public API, written to compile against every release
 * from 3.18 on: the types some releases lack (getFencedLock before 3.20,
 * getMultiLock(group, values) before 3.45, getNonReentrant*Lock before 4.x)
 * are reached by reflection and answer "lacks <what>" where missing.
 *
 * The line protocol is LineProbe's (with PROBE_NAME_PREFIX=p in the
 * environment, the client maps names with NameMapper p + name). Commands:
 *
 *   has <type>                              -> true | lacks <what>
 *   lock <type> <name> <tid> <leaseMs>      -> ok | lacks <what>
 *   unlock <type> <name> <tid>              -> ok
 *   set <sem|psem|latch> <name> - <n>       -> true | false  (trySetPermits / trySetCount)
 *   acquire sem <name> <tid> <n>            -> ok
 *   acquire psem <name> <tid>               -> id <permit id>
 *   release sem <name> - <n>                -> ok
 *   release psem <name> - <id>              -> ok
 *   await latch <name> <tid>                -> ok
 *   countdown latch <name> -                -> ok
 *   jtid <tid> | id | version | quit
 *
 * <type>: lock, fair, fenced, spin, read, write, nr (non-reentrant), nrfair,
 * multi and red (names joined by commas), faster (group,value,value...).
 */

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.concurrent.TimeUnit;

import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

public class MatrixProbe {
    public static void main(String[] args) throws Exception {
        LineProbe.serve(args, "matrix-probe", config -> config.setCodec(StringCodec.INSTANCE), MatrixProbe::exec, MatrixProbe::tidOf);
    }

    private static String tidOf(String[] p) {
        if (p[0].equals("jtid") && p.length > 1) {
            return p[1];
        }
        return p.length > 3 && !p[3].equals("-") ? p[3] : null;
    }

    /** Thrown when the release lacks a type. */
    static final class Lacks extends Exception {
        Lacks(String what) {
            super(what);
        }
    }

    private static Object call(Object target, String method, Class<?>[] types, Object... args) throws Exception {
        Method m;
        try {
            m = target.getClass().getMethod(method, types);
        } catch (NoSuchMethodException e) {
            throw new Lacks(method);
        }
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        }
    }

    private static RLock lockOf(RedissonClient c, String type, String name) throws Exception {
        String[] n = name.split(",");
        switch (type) {
            case "lock":
                return c.getLock(name);
            case "fair":
                return c.getFairLock(name);
            case "spin":
                return c.getSpinLock(name);
            case "read":
                return c.getReadWriteLock(name).readLock();
            case "write":
                return c.getReadWriteLock(name).writeLock();
            case "fenced":
                return (RLock) call(c, "getFencedLock", new Class<?>[]{String.class}, name);
            case "nr":
                return (RLock) call(c, "getNonReentrantLock", new Class<?>[]{String.class}, name);
            case "nrfair":
                return (RLock) call(c, "getNonReentrantFairLock", new Class<?>[]{String.class}, name);
            case "faster":
                return (RLock) call(c, "getMultiLock", new Class<?>[]{String.class, Collection.class},
                        n[0], new ArrayList<Object>(Arrays.asList(n).subList(1, n.length)));
            case "multi":
            case "red": {
                RLock[] locks = new RLock[n.length];
                for (int i = 0; i < n.length; i++) {
                    locks[i] = c.getLock(n[i]);
                }
                return type.equals("multi") ? c.getMultiLock(locks) : new RedissonRedLock(locks);
            }
        }
        throw new IllegalArgumentException("unknown type " + type);
    }

    private static String exec(RedissonClient c, String[] p) throws Exception {
        try {
            return run(c, p);
        } catch (Lacks e) {
            return "lacks " + e.getMessage();
        }
    }

    private static String run(RedissonClient c, String[] p) throws Exception {
        switch (p[0]) {
            case "jtid":
                return String.valueOf(Thread.currentThread().getId());
            case "has":
                if (!p[1].equals("sem") && !p[1].equals("psem") && !p[1].equals("latch")) {
                    lockOf(c, p[1], "matrix:has," + "v");
                }
                return "true";
        }
        String type = p[1], name = p[2];
        switch (p[0] + " " + type) {
            case "set sem":
                return String.valueOf(c.getSemaphore(name).trySetPermits(Integer.parseInt(p[4])));
            case "set psem":
                return String.valueOf(c.getPermitExpirableSemaphore(name).trySetPermits(Integer.parseInt(p[4])));
            case "set latch":
                return String.valueOf(c.getCountDownLatch(name).trySetCount(Long.parseLong(p[4])));
            case "acquire sem":
                c.getSemaphore(name).acquire(Integer.parseInt(p[4]));
                return "ok";
            case "acquire psem":
                return "id " + c.getPermitExpirableSemaphore(name).acquire();
            case "release sem":
                c.getSemaphore(name).release(Integer.parseInt(p[4]));
                return "ok";
            case "release psem":
                c.getPermitExpirableSemaphore(name).release(p[4]);
                return "ok";
            case "await latch":
                c.getCountDownLatch(name).await();
                return "ok";
            case "countdown latch":
                c.getCountDownLatch(name).countDown();
                return "ok";
        }
        RLock l = lockOf(c, type, name);
        switch (p[0]) {
            case "lock": {
                long lease = p.length > 4 ? Long.parseLong(p[4]) : -1;
                if (lease > 0) {
                    l.lock(lease, TimeUnit.MILLISECONDS);
                } else {
                    l.lock();
                }
                return "ok";
            }
            case "unlock":
                l.unlock();
                return "ok";
        }
        return "err unknown command " + String.join(" ", p);
    }
}
